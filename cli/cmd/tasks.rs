//! `surfgym tasks ...`: check the bundled tasks' reference solutions in Chromium, and
//! import task suites from files.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use engine::CampaignSpec;
use store::TaskFilter;

use crate::args::{Common, TaskArgs};
use crate::cmd::run::run_here;
use crate::db;
use crate::setup::{environment, finish};
use crate::summary;

/// Task suites.
#[derive(Subcommand)]
pub enum TasksCommand {
    /// Run every bundled task's reference solution in Chromium and judge it.
    Verify(VerifyArgs),
    /// Audit rubrics on trajectories of known truth: each task's reference solution must
    /// succeed, the do-nothing agent and every strict prefix of the solution must fail,
    /// every fact must be false somewhere, every check must be evaluable. Exits non-zero on
    /// any finding the task's `audit.accept` does not accept.
    Audit(crate::cmd::audit::AuditArgs),
    /// Import tasks from a file or a directory of files; bad items are reported, good ones
    /// stored.
    Import(ImportArgs),
}

/// Runs a task command.
pub async fn run(common: &Common, cmd: TasksCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        TasksCommand::Verify(a) => verify(common, a).await,
        TasksCommand::Import(a) => import(common, a).await,
        TasksCommand::Audit(a) => crate::cmd::audit::run(common, a).await,
    }
}

/// `surfgym tasks verify`.
#[derive(Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub tasks: TaskArgs,
    /// First port of the practice sites (0: any free ports).
    #[arg(long, default_value_t = 8701)]
    pub sites_port: u16,
}

/// `surfgym tasks import`.
#[derive(Args)]
pub struct ImportArgs {
    /// The file: JSON Lines, a JSON array, or pretty-printed JSON objects (WebArena's
    /// `config_files/N.json`), task names for MiniWoB++; or a directory, whose `.json` and
    /// `.jsonl` files are each imported (WebArena's `config_files/`).
    pub file: PathBuf,
    /// Overwrite tasks that have the same id.
    #[arg(long)]
    pub replace: bool,
    /// Input format: surfgym, webvoyager, webarena, webgym, miniwob.
    #[arg(long, default_value = "surfgym")]
    pub format: String,
    /// Base URL for a WebArena placeholder, e.g. --base SHOPPING=http://localhost:7770, or
    /// MINIWOB=URL where MiniWoB++'s html/ is served (repeatable).
    #[arg(long = "base", value_name = "KEY=URL")]
    pub bases: Vec<String>,
    /// WebVoyager reference answers: a JSON object from task id to answer.
    #[arg(long)]
    pub answers: Option<PathBuf>,
    /// The split of the imported tasks, train or test. Default: test for benchmark formats;
    /// for surfgym's own format, each task's `split` (derived from its site when absent).
    #[arg(long, value_parser = parse_split)]
    pub split: Option<tasks::Split>,
}

fn parse_split(s: &str) -> Result<tasks::Split, String> {
    tasks::Split::parse(s).ok_or_else(|| format!("`{s}`: use train or test"))
}

/// `surfgym tasks verify`: every reference solution must succeed.
async fn verify(common: &Common, args: VerifyArgs) -> anyhow::Result<ExitCode> {
    // Only the bundled suite has reference solutions unless the filter says otherwise.
    let mut verify_filter = args.tasks.filter();
    if verify_filter == TaskFilter::default() {
        verify_filter.tag = Some(engine::BUNDLED_TAG.into());
    }
    let env = environment(common, args.sites_port).await?;
    let spec = CampaignSpec {
        name: Some("verify reference solutions".into()),
        tasks: Some(verify_filter),
        policy: Some("scripted".into()),
        max_attempts: Some(1),
        ..Default::default()
    };
    let id = run_here(&env, spec).await?;
    let failures = summary::print_failures(&env.db.store, id).await?;
    finish(env).await?;
    if failures == 0 {
        println!("\nevery reference solution succeeds");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("\n{failures} reference solution(s) fail");
        Ok(ExitCode::FAILURE)
    }
}

/// `surfgym tasks import`.
async fn import(common: &Common, args: ImportArgs) -> anyhow::Result<ExitCode> {
    let format = tasks::formats::Format::parse(&args.format).with_context(|| {
        format!(
            "unknown format `{}` ({})",
            args.format,
            tasks::formats::Format::NAMES
        )
    })?;
    let mut opts = tasks::formats::ImportOptions {
        split: args.split,
        ..Default::default()
    };
    for b in &args.bases {
        let (k, v) = b
            .split_once('=')
            .with_context(|| format!("--base {b}: use KEY=URL"))?;
        opts.bases.insert(k.to_string(), v.to_string());
    }
    if let Some(p) = &args.answers {
        opts.reference_answers = serde_json::from_str(&std::fs::read_to_string(p)?)
            .with_context(|| format!("{}: a JSON object of id → answer", p.display()))?;
    }
    let files = tasks::formats::import_path(format, &args.file, &opts)?;
    let db = db::open(common).await?;
    let (mut ok, mut bad, mut warned) = (0, 0, 0);
    for (file, lines) in files {
        for line in lines {
            let at = format!("{}:{}", file.display(), line.line);
            let stored = match line.result {
                Ok(task) => {
                    let r = if args.replace {
                        db.store.upsert_task(&task).await
                    } else {
                        db.store.insert_task(&task).await
                    };
                    r.map_err(|e| e.to_string())
                }
                Err(errors) => Err(errors
                    .iter()
                    .map(|e| {
                        if e.field.is_empty() {
                            e.message.clone()
                        } else {
                            e.to_string()
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("; ")),
            };
            match stored {
                Ok(()) => {
                    ok += 1;
                    if !line.warnings.is_empty() {
                        warned += 1;
                    }
                    for w in &line.warnings {
                        eprintln!("{at}: warning: {w}");
                    }
                }
                Err(e) => {
                    bad += 1;
                    eprintln!("{at}: {e}");
                }
            }
        }
    }
    if warned > 0 {
        println!("imported {ok} task(s), {bad} line(s) rejected, {warned} imported with warnings");
    } else {
        println!("imported {ok} task(s), {bad} line(s) rejected");
    }
    Ok(if bad == 0 && ok > 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
