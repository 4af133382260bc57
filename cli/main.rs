//! `surfgym`: the command line. Glue only: parsing, set-up, progress display; the work is
//! done by the `engine` and `web` crates.

mod bench;
mod bench_env;
mod bench_policy;
mod bench_rollout;
mod bench_soak;
mod bench_workers;
mod browser_args;
mod db;
mod export;
mod judge;
mod models;
mod observe;
mod progress;
mod run;
mod summary;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

/// A web-agent RL gym: real Chromium, rubric judges, Postgres, a replay dashboard.
#[derive(Parser)]
#[command(name = "surfgym", version, about)]
struct Cli {
    #[command(flatten)]
    common: Common,
    #[command(subcommand)]
    command: Command,
}

/// Options every command shares.
#[derive(Args, Clone)]
pub struct Common {
    /// Where surfgym keeps its private Postgres cluster and other state.
    #[arg(
        long,
        env = "SURFGYM_DATA_DIR",
        default_value = ".surfgym",
        global = true
    )]
    pub data_dir: PathBuf,
    /// Postgres to use; without it a private cluster is started under the data directory.
    #[arg(long, env = "DATABASE_URL", global = true, hide_env_values = true)]
    pub database_url: Option<String>,
    /// Chromium executable.
    #[arg(
        long,
        env = "SURFGYM_CHROMIUM",
        default_value = "/usr/bin/chromium",
        global = true
    )]
    pub chromium: PathBuf,
    /// Browser processes.
    #[arg(long, default_value_t = 1, global = true)]
    pub browsers: usize,
    /// Concurrent browser contexts (episodes) per browser.
    #[arg(long, default_value_t = 4, global = true)]
    pub contexts: usize,
    /// Episode lease length in seconds: how long until a dead runner's episodes are
    /// reclaimed by others.
    #[arg(long, default_value_t = 60, global = true)]
    pub lease_secs: u64,
    /// Median latency of the simulated policies (`scripted-sim`, `random-sim`), in ms.
    #[arg(long, default_value_t = 800, global = true)]
    pub sim_latency_ms: u64,
    /// Log-space spread of the simulated latency (0.7: p99 about 5x the median).
    #[arg(long, default_value_t = 0.7, global = true)]
    pub sim_sigma: f64,
    #[command(flatten)]
    pub models: models::ModelArgs,
    #[command(flatten)]
    pub browser: browser_args::BrowserArgs,
}

#[derive(Subcommand)]
enum Command {
    /// The whole product on bundled data: private Postgres, practice sites, bundled tasks,
    /// a scripted and a random campaign, a summary, and the dashboard until Ctrl-C.
    Demo(run::DemoArgs),
    /// Serve the API and dashboard (and the practice sites); runs campaigns as they come.
    Serve(run::ServeArgs),
    /// Create a campaign over registered tasks and run it here, with a progress bar.
    Run(run::RunArgs),
    /// A rollout worker: runs episodes of queued and running campaigns from the database,
    /// beside any number of other workers, until stopped.
    Worker(run::WorkerArgs),
    /// Campaigns: list, show, pause, resume, cancel, run an existing one here.
    #[command(subcommand)]
    Campaign(run::CampaignCommand),
    /// Benchmarks that print figures.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Serve the ONNX policy as an OpenAI-compatible /v1/chat/completions endpoint.
    ServePolicy(models::ServePolicyArgs),
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
    Tasks(TasksCommand),
    /// The private Postgres cluster.
    #[command(subcommand)]
    Db(DbCommand),
}

#[derive(Subcommand)]
enum TasksCommand {
    /// Run every bundled task's reference solution in Chromium and judge it.
    Verify(run::VerifyArgs),
    /// Import tasks from a JSON Lines file; bad lines are reported, good ones stored.
    Import(run::ImportArgs),
}

#[derive(Subcommand)]
enum DbCommand {
    /// Start (or find) the private cluster and print `DATABASE_URL=...`.
    Start,
    /// Stop the private cluster.
    Stop,
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
            Command::Demo(a) => run::demo(&cli.common, a).await,
            Command::Serve(a) => run::serve(&cli.common, a).await,
            Command::Run(a) => run::run(&cli.common, a).await,
            Command::Worker(a) => run::worker(&cli.common, a).await,
            Command::Campaign(c) => run::campaign(&cli.common, c).await,
            Command::Bench(b) => bench::run(&cli.common, b).await,
            Command::ServePolicy(a) => models::serve_policy(&cli.common, a).await,
            Command::Observe(a) => observe::observe(&cli.common, a).await,
            Command::Export(a) => export::export(&cli.common, a).await,
            Command::Judge(j) => judge::run(&cli.common, j).await,
            Command::Tasks(TasksCommand::Verify(a)) => run::verify(&cli.common, a).await,
            Command::Tasks(TasksCommand::Import(a)) => run::import(&cli.common, a).await,
            Command::Db(DbCommand::Start) => db::start(&cli.common).await,
            Command::Db(DbCommand::Stop) => db::stop(&cli.common).await,
        }
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
