//! `surfgym bench ...`: benchmarks that print figures, one module each. What several of
//! them share: summary statistics (`stats`), readings of /proc (`procfs`), the pool they
//! drive, and episodes run on the pool directly without the runner (`episode`).

mod api;
mod curriculum;
mod env;
mod episode;
mod history;
mod policy;
mod procfs;
mod rollout;
mod sessions;
mod soak;
mod stats;
mod traffic;
mod train;
mod workers;

use std::process::ExitCode;
use std::time::Duration;

use anyhow::bail;
use browser_pool::PoolConfig;
use clap::Subcommand;

use crate::args::Common;

/// Benchmarks.
#[derive(Subcommand)]
pub enum BenchCommand {
    /// Async vs lockstep rollouts with a simulated heavy-tailed policy server.
    Rollout(rollout::RolloutArgs),
    /// ONNX policy throughput: tokens/s and latency per action by batch size.
    Policy(policy::PolicyArgs),
    /// Environment step, reset, throughput and memory per context, beside the raw CDP floor
    /// and BrowserGym's figures.
    Env(env::EnvArgs),
    /// Scaling with `surfgym worker` processes pulling one campaign from one Postgres.
    Workers(workers::WorkersArgs),
    /// Many episodes through one pool, ordinary and hostile pages mixed: failures, and what
    /// would grow if something leaked.
    Soak(soak::SoakArgs),
    /// Training throughput of the built-in trainer (tokens and samples per second).
    Train(train::TrainArgs),
    /// Curriculum vs fixed short and long horizons and a warm start, at equal
    /// environment steps: learning curves on held-out seeds or tasks.
    Curriculum(curriculum::CurriculumArgs),
    /// Writes a synthetic history (campaigns, episodes, steps, verdicts, all marked
    /// `synthetic`) into the database, for `bench api`.
    History(history::HistoryArgs),
    /// Environment sessions driven over the API against in-process: reset and step
    /// latency, the API's overhead, sessions/s and memory at many sessions at once.
    Sessions(sessions::SessionsArgs),
    /// Response times (p50/p95/max) of the API's lists, aggregates and compares and of the
    /// dashboard pages' first render, on the database's history.
    Api(api::ApiArgs),
    /// Recording and replaying web state: step time live, recording and replayed; bytes
    /// recorded per episode and what content addressing stores once.
    Traffic(traffic::TrafficArgs),
}

/// Runs a benchmark.
pub async fn run(common: &Common, cmd: BenchCommand) -> anyhow::Result<ExitCode> {
    if let Some(warning) = unoptimised_warning(cfg!(debug_assertions)) {
        // On stderr: JSON-lines output on stdout stays parseable.
        eprintln!("{warning}");
    }
    match cmd {
        BenchCommand::Rollout(a) => rollout::run(common, a).await,
        BenchCommand::Policy(a) => policy::run(common, a).await,
        BenchCommand::Env(a) => env::run(common, a).await,
        BenchCommand::Workers(a) => workers::run(common, a).await,
        BenchCommand::Soak(a) => soak::run(common, a).await,
        BenchCommand::Train(a) => train::run(common, a).await,
        BenchCommand::Curriculum(a) => curriculum::run(common, a).await,
        BenchCommand::History(a) => history::run(common, a).await,
        BenchCommand::Api(a) => api::run(common, a).await,
        BenchCommand::Sessions(a) => sessions::run(common, a).await,
        BenchCommand::Traffic(a) => traffic::run(common, a).await,
    }
}

/// The pool a benchmark drives: the command line's browser options, and leases that
/// wait as long as a benchmark's queue of episodes may take.
fn bench_pool(common: &Common) -> anyhow::Result<PoolConfig> {
    if !common.chromium.exists() {
        bail!(
            "Chromium not found at {}: run ./scripts/setup.sh, or point --chromium / SURFGYM_CHROMIUM at one",
            common.chromium.display()
        );
    }
    let mut cfg = PoolConfig::new(&common.chromium);
    common.browser.apply(&mut cfg)?;
    cfg.lease_timeout = Duration::from_secs(600);
    Ok(cfg)
}

/// What a benchmark built without optimisation says before its figures: candle's and the
/// policy's CPU kernels run many times slower in a debug build, so its figures are not
/// the ones a user gets.
fn unoptimised_warning(debug_build: bool) -> Option<&'static str> {
    debug_build.then_some(
        "warning: this surfgym was built without optimisation (a debug build): its figures \
         are many times slower than a release build's. Measure with \
         `cargo run --release -p surfgym -- bench ...` or ./target/release/surfgym.",
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_debug_build_warns_that_its_figures_are_not_a_release_builds() {
        assert!(
            super::unoptimised_warning(true)
                .unwrap()
                .contains("--release")
        );
        assert_eq!(super::unoptimised_warning(false), None);
    }
}
