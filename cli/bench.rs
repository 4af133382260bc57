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
}

/// Runs a benchmark.
pub async fn run(common: &Common, cmd: BenchCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        BenchCommand::Rollout(a) => crate::bench_rollout::run(common, a).await,
        BenchCommand::Policy(a) => crate::bench_policy::run(common, a).await,
        BenchCommand::Env(a) => crate::bench_env::run(common, a).await,
        BenchCommand::Workers(a) => crate::bench_workers::run(common, a).await,
    }
}
