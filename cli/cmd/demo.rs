//! `surfgym demo`: the whole product on bundled data: a scripted and a random campaign
//! over the bundled tasks, a summary, a short training run (its learning curve on the
//! dashboard), and the dashboard until Ctrl-C.

use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use engine::CampaignSpec;
use store::TaskFilter;
use uuid::Uuid;

use crate::args::{Common, ServerArgs};
use crate::setup::{environment, finish, start_web, stopped, url};
use crate::{progress, summary};

/// `surfgym demo`.
#[derive(Args)]
pub struct DemoArgs {
    /// Exit once the campaigns are done instead of serving the dashboard until Ctrl-C.
    #[arg(long)]
    pub exit_when_done: bool,
    /// Policies to run, one campaign each.
    #[arg(long, value_delimiter = ',', default_value = "scripted,random")]
    pub policies: Vec<String>,
    /// Episodes per task.
    #[arg(long, default_value_t = 1)]
    pub rollouts: u32,
    /// Step limit per episode, capping each task's own (default: each task's own).
    #[arg(long)]
    pub max_steps: Option<u32>,
    /// Skip the short training run (tiny-text, two iterations) that follows the campaigns.
    #[arg(long)]
    pub no_train: bool,
    #[command(flatten)]
    pub server: ServerArgs,
}

/// `surfgym demo`.
pub async fn demo(common: &Common, args: DemoArgs) -> anyhow::Result<ExitCode> {
    // Before anything starts: `--no-auth` beyond loopback is refused.
    args.server.access()?;
    let env = environment(common, args.server.sites_port).await?;
    let addr = start_web(&env.engine, &args.server).await?;
    println!("dashboard: {}", url(addr));
    let mut ids: Vec<Uuid> = Vec::new();
    for policy in &args.policies {
        let spec = CampaignSpec {
            name: Some(format!("demo {policy}")),
            tasks: Some(TaskFilter {
                tag: Some(engine::BUNDLED_TAG.into()),
                ..Default::default()
            }),
            policy: Some(policy.clone()),
            rollouts_per_task: Some(args.rollouts),
            max_steps: args.max_steps,
            ..Default::default()
        };
        ids.push(
            env.engine
                .create_campaign(spec)
                .await
                .context("creating the demo campaign")?,
        );
    }
    env.engine.start_scheduler().await;
    progress::watch(&env.db.store, &ids).await?;
    summary::print(&env.db.store, &ids).await?;
    println!();
    if !args.no_train
        && let Some(run) = super::demo_train::start(common, &env.engine).await?
    {
        let executor = super::serve::start_training_executor(common, &env.engine);
        println!(
            "training run {run}: its learning curve at {}training-runs/{run}",
            url(addr)
        );
        let state = super::demo_train::watch(&env.engine, run).await?;
        println!("training run {run}: {state}");
        if args.exit_when_done {
            executor.abort();
        }
    }
    println!(
        "dashboard: {}  (episode replays under each campaign)",
        url(addr)
    );
    if args.exit_when_done {
        finish(env).await?;
        return Ok(ExitCode::SUCCESS);
    }
    println!("serving until Ctrl-C (or SIGTERM)");
    stopped().await;
    finish(env).await?;
    Ok(ExitCode::SUCCESS)
}
