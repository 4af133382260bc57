//! `surfgym campaign ...`: list, show, pause, resume, cancel, and run an existing
//! campaign here.

use std::process::ExitCode;

use anyhow::Context;
use uuid::Uuid;

use crate::args::Common;
use crate::db;
use crate::setup::{engine, environment, finish};
use crate::{progress, summary};

/// `surfgym campaign ...`.
#[derive(clap::Subcommand)]
pub enum CampaignCommand {
    /// List campaigns, newest first.
    List,
    /// Show one campaign's counts and outcome table.
    Show {
        /// Campaign id.
        id: Uuid,
    },
    /// Stop starting episodes (running ones finish).
    Pause {
        /// Campaign id.
        id: Uuid,
    },
    /// Queue a paused campaign again.
    Resume {
        /// Campaign id.
        id: Uuid,
    },
    /// Cancel: unfinished episodes are not run.
    Cancel {
        /// Campaign id.
        id: Uuid,
    },
    /// Run (or resume) an existing campaign here, with a progress bar.
    Run {
        /// Campaign id.
        id: Uuid,
        /// First port of the practice sites (0: any free ports).
        #[arg(long, default_value_t = 8701)]
        sites_port: u16,
    },
}

/// `surfgym campaign ...`.
pub async fn campaign(common: &Common, cmd: CampaignCommand) -> anyhow::Result<ExitCode> {
    if let CampaignCommand::Run { id, sites_port } = cmd {
        let env = environment(common, sites_port).await?;
        let engine = env.engine.clone();
        let runner = tokio::spawn(async move { engine.run_campaign(id).await });
        progress::watch(&env.db.store, &[id]).await?;
        runner.await.context("campaign task panicked")??;
        summary::print(&env.db.store, &[id]).await?;
        finish(env).await?;
        return Ok(ExitCode::SUCCESS);
    }
    let db = db::open(common).await?;
    let engine = engine(common, &db)?;
    let store = &db.store;
    match cmd {
        CampaignCommand::List => {
            let (list, total) = store.list_campaigns(100, 0).await?;
            println!(
                "{:<36}  {:<10} {:<13} {:>9} {:>8}  name",
                "id", "status", "policy", "done", "success"
            );
            for c in list {
                let rate = c
                    .success_rate
                    .map_or("-".to_string(), |r| format!("{:.0}%", r * 100.0));
                let done = format!(
                    "{}/{}",
                    c.counts.finished + c.counts.failed,
                    c.total_episodes
                );
                println!(
                    "{}  {:<10} {:<13} {:>9} {:>8}  {}",
                    c.id, c.status, c.policy, done, rate, c.name
                );
            }
            println!("{total} campaign(s)");
        }
        CampaignCommand::Show { id } => {
            let c = store
                .get_campaign(id)
                .await?
                .ok_or_else(|| anyhow::anyhow!("no campaign {id}"))?;
            println!("{}", serde_json::to_string_pretty(&c)?);
            summary::print(store, &[id]).await?;
        }
        CampaignCommand::Pause { id } => {
            engine.pause_campaign(id).await?;
            println!("paused {id}: running episodes finish, no new ones start");
        }
        CampaignCommand::Resume { id } => {
            engine.resume_campaign(id).await?;
            println!(
                "queued {id} again: a running `surfgym serve` or `surfgym worker` picks it up"
            );
        }
        CampaignCommand::Cancel { id } => {
            engine.cancel_campaign(id).await?;
            println!("cancelled {id}");
        }
        CampaignCommand::Run { .. } => unreachable!("handled above"),
    }
    Ok(ExitCode::SUCCESS)
}
