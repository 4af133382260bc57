//! `surfgym bench history`: writes a synthetic history (campaigns, tasks, episodes, steps,
//! verdicts, marked `synthetic`) into the database, for `bench api` to measure the API
//! against. The generator is `store::synthetic`; this is its command line.

use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use store::synthetic::{HistorySpec, MARK};

use crate::args::Common;

/// What history to write.
#[derive(Args)]
pub struct HistoryArgs {
    /// Episodes to write.
    #[arg(long, default_value_t = 100_000)]
    episodes: u64,
    /// Steps per episode on average (`episodes × this` steps in all, stored by the
    /// episodes that finished).
    #[arg(long, default_value_t = 20)]
    steps_per_episode: u32,
    /// Campaigns (default: one per thousand episodes, one of them a fifth of the history).
    #[arg(long)]
    campaigns: Option<u32>,
    /// Distinct tasks, spread over 8 sites, three difficulties and both splits.
    #[arg(long, default_value_t = 400)]
    tasks: u32,
    /// Seed (the same seed writes the same history; add to a set with another one).
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Episodes per transaction.
    #[arg(long, default_value_t = 1000)]
    batch: usize,
    /// Write even into a database that holds real (non-synthetic) campaigns.
    #[arg(long)]
    force: bool,
}

/// Runs the generator.
pub async fn run(common: &Common, a: HistoryArgs) -> anyhow::Result<ExitCode> {
    let db = crate::db::open(common).await?;
    let spec = HistorySpec {
        episodes: a.episodes,
        steps_per_episode: a.steps_per_episode,
        campaigns: a.campaigns,
        tasks: a.tasks,
        seed: a.seed,
        batch: a.batch,
        force: a.force,
    };
    let bar = crate::progress::bar(
        a.episodes,
        "history",
        9,
        "{pos}/{len} episodes {msg} {elapsed_precise} eta {eta}",
    )?;
    let start = Instant::now();
    let report = db
        .store
        .generate_history(&spec, |p| {
            bar.set_position(p.episodes);
            bar.set_message(format!("{} steps", p.steps));
        })
        .await;
    bar.finish();
    let report = report?;
    let secs = start.elapsed().as_secs_f64();
    println!(
        "wrote {} campaigns, {} episodes, {} steps, {} verdicts ({} tasks) in {secs:.1} s \
         ({:.0} steps/s); every row is marked `{MARK}` (task tag and id prefix, campaign config)",
        report.campaigns,
        report.episodes,
        report.steps,
        report.verdicts,
        report.tasks,
        report.steps as f64 / secs.max(0.001),
    );
    let (tables, total) = db.store.table_sizes().await?;
    println!("database size: {:.1} MiB", total as f64 / 1048576.0);
    for (table, bytes) in tables.iter().take(6) {
        println!("  {table:<14} {:>10.1} MiB", *bytes as f64 / 1048576.0);
    }
    Ok(ExitCode::SUCCESS)
}
