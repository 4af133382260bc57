//! `surfgym run`: a new campaign over registered tasks, run in this process with a
//! progress bar and a summary.

use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use engine::CampaignSpec;
use uuid::Uuid;

use crate::args::{Common, TaskArgs};
use crate::setup::{Env, environment, finish};
use crate::{progress, summary};

/// `surfgym run`.
#[derive(Args)]
pub struct RunArgs {
    /// Policy.
    #[arg(long, default_value = "random")]
    pub policy: String,
    #[command(flatten)]
    pub tasks: TaskArgs,
    /// Episodes per task.
    #[arg(long, default_value_t = 1)]
    pub rollouts: u32,
    /// Rollouts per seed (a task instance): k samples of each instance, each with its own
    /// sampling seed, the groups GRPO compares (must divide --rollouts).
    #[arg(long, default_value_t = 1)]
    pub samples_per_seed: u32,
    /// Step limit per episode, capping each task's own (default: each task's own).
    #[arg(long)]
    pub max_steps: Option<u32>,
    /// Answers an agent may give per episode: each but the last is followed by a prompt to
    /// check the page again (TTI's re-check); the last one is judged.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=engine::MAX_ANSWER_CHECKS as i64))]
    pub answer_checks: u32,
    /// Score pages that turn the agent away (CAPTCHA, bot or login walls, 403, 429) as the
    /// agent's failures instead of ending their episodes as blocked (retried, not scored).
    #[arg(long)]
    pub score_blocked: bool,
    /// Ask the model judge (`--judge-onnx-model` or `--judge-url`) to confirm each block
    /// the rules find, from the page's screenshot; a page it sees no wall on goes on.
    #[arg(long, conflicts_with = "score_blocked")]
    pub confirm_blocks: bool,
    /// Record every exchange of the episodes' pages into a recording with the campaign's
    /// id (export it with `surfgym har export ID`).
    #[arg(long, conflicts_with = "replay")]
    pub record: bool,
    /// Answer the pages' requests from this recording instead of the network (a recording
    /// campaign's id, or `surfgym har import`'s).
    #[arg(long)]
    pub replay: Option<uuid::Uuid>,
    /// What a replay does with a request its recording lacks: fail (as if offline),
    /// not_found (a 404 page) or network (let it through).
    #[arg(long, requires = "replay", value_parser = ["fail", "not_found", "network"])]
    pub replay_unmatched: Option<String>,
    /// A domain the episodes' pages may load documents from, with its subdomains
    /// (repeatable); a navigation elsewhere is refused before it leaves the browser.
    #[arg(long = "allowed-domain")]
    pub allowed_domains: Vec<String>,
    /// Base seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Campaign name.
    #[arg(long)]
    pub name: Option<String>,
    /// First port of the practice sites (0: any free ports).
    #[arg(long, default_value_t = 8701)]
    pub sites_port: u16,
}

/// Creates the campaign and runs it here, with a progress bar, then prints its summary.
pub async fn run_here(env: &Env, spec: CampaignSpec) -> anyhow::Result<Uuid> {
    let id = env.engine.create_campaign(spec).await?;
    let engine = env.engine.clone();
    let runner = tokio::spawn(async move { engine.run_campaign(id).await });
    progress::watch(&env.db.store, &[id]).await?;
    runner.await.context("campaign task panicked")??;
    summary::print(&env.db.store, &[id]).await?;
    Ok(id)
}

/// `surfgym run`.
pub async fn run(common: &Common, args: RunArgs) -> anyhow::Result<ExitCode> {
    let mut common = common.clone();
    // Recording and replaying happen at the browsers' gate.
    common.browser.capture_traffic |= args.record || args.replay.is_some();
    let env = environment(&common, args.sites_port).await?;
    let spec = CampaignSpec {
        name: args.name,
        tasks: Some(args.tasks.filter()),
        policy: Some(args.policy),
        rollouts_per_task: Some(args.rollouts),
        samples_per_seed: Some(args.samples_per_seed),
        max_steps: args.max_steps,
        answer_checks: Some(args.answer_checks),
        detect_blocks: Some(!args.score_blocked),
        confirm_blocks: Some(args.confirm_blocks),
        record: Some(args.record),
        replay: args.replay,
        replay_unmatched: args.replay_unmatched,
        allowed_domains: (!args.allowed_domains.is_empty()).then_some(args.allowed_domains),
        seed: Some(args.seed),
        ..Default::default()
    };
    let id = run_here(&env, spec).await?;
    if let Some(line) = crate::summary::policy_prompts_line() {
        println!("{line}");
    }
    println!("campaign {id}");
    finish(env).await?;
    Ok(ExitCode::SUCCESS)
}
