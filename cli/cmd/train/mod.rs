//! `surfgym train`: turning judged episodes into new policy weights. `step` is one update
//! (filtered behaviour cloning or GRPO) from stored campaigns or an export, published as a
//! policy version the ONNX policy loads like any model directory.

mod step;

use std::process::ExitCode;

use clap::Subcommand;

use crate::args::Common;

/// Training.
#[derive(Subcommand)]
pub enum TrainCommand {
    /// One update from judged episodes (stored campaigns or `surfgym export` JSON Lines):
    /// select steps, train, and publish a new policy version.
    Step(step::StepArgs),
}

/// Runs a `train` subcommand.
pub async fn run(common: &Common, c: TrainCommand) -> anyhow::Result<ExitCode> {
    match c {
        TrainCommand::Step(a) => step::step(common, a).await,
    }
}
