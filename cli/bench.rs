//! `surfgym bench ...`: benchmarks that print figures.

use std::process::ExitCode;

use clap::Subcommand;

use crate::Common;

/// Benchmarks.
#[derive(Subcommand)]
pub enum BenchCommand {
    /// Async vs lockstep rollouts with a simulated heavy-tailed policy server.
    Rollout(crate::bench_rollout::RolloutArgs),
    /// ONNX policy throughput: tokens/s and latency per action by batch size.
    Policy(crate::bench_policy::PolicyArgs),
    /// Environment step, reset, throughput and memory per context, beside the raw CDP floor
    /// and BrowserGym's figures.
    Env(crate::bench_env::EnvArgs),
    /// Scaling with `surfgym worker` processes pulling one campaign from one Postgres.
    Workers(crate::bench_workers::WorkersArgs),
    /// Many episodes through one pool, ordinary and hostile pages mixed: failures, and what
    /// would grow if something leaked.
    Soak(crate::bench_soak::SoakArgs),
}

/// Runs a benchmark.
pub async fn run(common: &Common, cmd: BenchCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        BenchCommand::Rollout(a) => crate::bench_rollout::run(common, a).await,
        BenchCommand::Policy(a) => crate::bench_policy::run(common, a).await,
        BenchCommand::Env(a) => crate::bench_env::run(common, a).await,
        BenchCommand::Workers(a) => crate::bench_workers::run(common, a).await,
        BenchCommand::Soak(a) => crate::bench_soak::run(common, a).await,
    }
}

/// Steady throughput: episodes finished between the 10th and 90th percentile of finish
/// times, per hour (start-up and the last stragglers left out).
pub(crate) fn steady_per_hour(finish: &[f64]) -> Option<f64> {
    if finish.len() < 5 {
        return None;
    }
    let at = |q: f64| finish[((finish.len() - 1) as f64 * q).round() as usize];
    let (lo, hi) = (at(0.1), at(0.9));
    let n = finish.iter().filter(|&&t| t > lo && t <= hi).count();
    (hi > lo).then(|| n as f64 / (hi - lo) * 3600.0)
}

#[cfg(test)]
mod tests {
    use super::steady_per_hour;

    #[test]
    fn steady_rate_leaves_out_start_up_and_tail() {
        // One episode a second from t=10 s, with a slow start and a long straggler.
        let mut t: Vec<f64> = (0..100).map(|i| 10.0 + i as f64).collect();
        t.push(500.0);
        let rate = steady_per_hour(&t).unwrap();
        assert!((rate - 3600.0).abs() < 100.0, "{rate}");
        assert_eq!(steady_per_hour(&[1.0, 2.0]), None);
    }
}
