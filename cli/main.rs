//! `surfgym`: the command line. Glue only: parsing, set-up, progress display; the work is
//! done by the `engine` and `web` crates. This file parses and dispatches: each
//! subcommand is a module of `cmd` (benchmarks: `bench`), shared options are `args`'.

mod args;
mod bench;
mod cmd;
mod db;
mod models;
mod pipe;
mod progress;
mod setup;
mod summary;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::args::Common;
use crate::cmd::{
    campaign, demo, export, har, judge, observe, run, serve, serve_policy, tasks, token, train,
    worker,
};

/// A web-agent RL gym: real Chromium, rubric judges, Postgres, a replay dashboard.
#[derive(Parser)]
#[command(name = "surfgym", version, about)]
struct Cli {
    #[command(flatten)]
    common: Common,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The whole product on bundled data: private Postgres, practice sites, bundled tasks,
    /// a scripted and a random campaign, a summary, and the dashboard until Ctrl-C.
    Demo(demo::DemoArgs),
    /// Serve the API and dashboard (and the practice sites); runs campaigns as they come.
    Serve(serve::ServeArgs),
    /// Create a campaign over registered tasks and run it here, with a progress bar.
    Run(run::RunArgs),
    /// A rollout worker: runs episodes of queued and running campaigns from the database,
    /// beside any number of other workers, until stopped.
    Worker(worker::WorkerArgs),
    /// Campaigns: list, show, pause, resume, cancel, run an existing one here.
    #[command(subcommand)]
    Campaign(campaign::CampaignCommand),
    /// Benchmarks that print figures.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Serve the ONNX policy as an OpenAI-compatible /v1/chat/completions endpoint.
    ServePolicy(serve_policy::ServePolicyArgs),
    /// What an agent sees on a page (elements, tabs, events, accessibility tree,
    /// screenshots), after the actions given: for writing tasks and debugging policies.
    Observe(observe::ObserveArgs),
    /// Finished episodes as JSON Lines (steps, raw outputs, per-token log-probabilities,
    /// verdicts, splits), for training outside surfgym.
    Export(export::ExportArgs),
    /// Judge calibration.
    #[command(subcommand)]
    Judge(judge::JudgeCommand),
    /// Task suites.
    #[command(subcommand)]
    Tasks(tasks::TasksCommand),
    /// Training: one update from judged episodes, published as a policy version.
    #[command(subcommand)]
    Train(train::TrainCommand),
    /// The private Postgres cluster.
    #[command(subcommand)]
    Db(cmd::db::DbCommand),
    /// API tokens: create (printed once), list, revoke.
    #[command(subcommand)]
    Token(token::TokenCommand),
    /// Recordings of web state as HAR files: export, import, list.
    #[command(subcommand)]
    Har(har::HarCommand),
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SURFGYM_LOG")
        // chromiumoxide warns about every CDP event newer than its protocol types.
        .unwrap_or_else(|_| {
            tracing_subscriber::EnvFilter::new("warn,surfgym=info,chromiumoxide=error")
        });
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    pipe::exit_quietly_when_stdout_closes();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = rt.block_on(async move {
        match cli.command {
            Command::Demo(a) => demo::demo(&cli.common, a).await,
            Command::Serve(a) => serve::serve(&cli.common, a).await,
            Command::Run(a) => run::run(&cli.common, a).await,
            Command::Worker(a) => worker::worker(&cli.common, a).await,
            Command::Campaign(c) => campaign::campaign(&cli.common, c).await,
            Command::Bench(b) => bench::run(&cli.common, b).await,
            Command::ServePolicy(a) => serve_policy::serve_policy(&cli.common, a).await,
            Command::Observe(a) => observe::observe(&cli.common, a).await,
            Command::Export(a) => export::export(&cli.common, a).await,
            Command::Judge(j) => judge::run(&cli.common, j).await,
            Command::Tasks(t) => tasks::run(&cli.common, t).await,
            Command::Train(t) => train::run(&cli.common, t).await,
            Command::Db(d) => cmd::db::run(&cli.common, d).await,
            Command::Token(t) => token::run(&cli.common, t).await,
            Command::Har(h) => har::run(&cli.common, h).await,
        }
    });
    match result {
        Ok(code) => code,
        Err(e) if pipe::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
