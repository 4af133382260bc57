//! `surfgym train`: turning judged episodes into new policy weights. `step` is one update
//! (filtered behaviour cloning or GRPO) from stored campaigns or an export, published as a
//! policy version the ONNX policy loads like any model directory; `export-peft` writes a LoRA
//! version's adapter in PEFT's layout.

mod peft;
pub(crate) mod run;
pub(crate) mod step;

use std::process::ExitCode;

use clap::Subcommand;

use crate::args::Common;

/// Training.
#[derive(Subcommand)]
pub enum TrainCommand {
    /// One update from judged episodes (stored campaigns or `surfgym export` JSON Lines):
    /// select steps, train, and publish a new policy version.
    Step(Box<step::StepArgs>),
    /// A training run (curriculum RL): rollouts, updates and held-out evaluations, iteration
    /// after iteration, kept in Postgres.
    Run(run::RunArgs),
    /// Resume a training run where it stopped (after a crash or a kill).
    Resume(run::ResumeArgs),
    /// Training runs, newest first.
    List,
    /// One training run's iterations.
    Show(run::ShowArgs),
    /// A LoRA version's adapter as a PEFT directory (vLLM, SGLang, transformers,
    /// `serve-policy --load-root`).
    ExportPeft(peft::ExportPeftArgs),
}

/// Runs a `train` subcommand.
pub async fn run(common: &Common, c: TrainCommand) -> anyhow::Result<ExitCode> {
    match c {
        TrainCommand::Step(a) => step::step(common, *a).await,
        TrainCommand::Run(a) => run::start(common, a).await,
        TrainCommand::Resume(a) => run::resume(common, a).await,
        TrainCommand::List => run::list(common).await,
        TrainCommand::Show(a) => run::show(common, a).await,
        TrainCommand::ExportPeft(a) => peft::export_peft(a),
    }
}
