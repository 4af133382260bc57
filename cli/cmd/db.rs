//! `surfgym db ...`: start and stop the private Postgres cluster under the data directory.

use std::process::ExitCode;

use clap::Subcommand;
use pg_cluster::LocalCluster;
use store::Store;

use crate::args::Common;

/// The private Postgres cluster.
#[derive(Subcommand)]
pub enum DbCommand {
    /// Start (or find) the private cluster and print `DATABASE_URL=...`.
    Start,
    /// Stop the private cluster.
    Stop,
}

/// Runs a database command.
pub async fn run(common: &Common, cmd: DbCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        DbCommand::Start => start(common).await,
        DbCommand::Stop => stop(common).await,
    }
}

/// `surfgym db start`.
async fn start(common: &Common) -> anyhow::Result<ExitCode> {
    let dir = common.data_dir.join("pg");
    let cluster = LocalCluster::ensure_started(&dir).await?;
    Store::connect(&cluster.url()).await?;
    println!("DATABASE_URL={}", cluster.url());
    Ok(ExitCode::SUCCESS)
}

/// `surfgym db stop`.
async fn stop(common: &Common) -> anyhow::Result<ExitCode> {
    let dir = common.data_dir.join("pg");
    let Some(cluster) = LocalCluster::running(&dir).await? else {
        println!("no private cluster running in {}", dir.display());
        return Ok(ExitCode::SUCCESS);
    };
    cluster.stop().await?;
    println!("stopped the private cluster in {}", dir.display());
    Ok(ExitCode::SUCCESS)
}
