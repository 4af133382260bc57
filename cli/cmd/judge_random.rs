//! `surfgym judge record-random`: the random policy's episodes on the bundled tasks,
//! written for a person to label (the reviewed part of the labelled set, see
//! `tasks::reviewed`), with a review sheet showing where each one ended.

use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use browser_pool::BrowserPool;
use clap::Args;
use engine::SitesServer;
use engine::audit::reviewed::{Recorded, record_random};
use futures::StreamExt;
use rubrics::Check;
use tasks::Task;

use crate::args::Common;

/// `surfgym judge record-random`.
#[derive(Args)]
pub struct RecordRandomArgs {
    /// Where to write the episodes (JSON Lines, every label `null`): review them, then
    /// move the file to `tasks/bundled/reviewed/`. An existing file is not overwritten.
    #[arg(long)]
    pub out: PathBuf,
    /// The review sheet: per episode its steps, the pages it visited, its answer, the
    /// final page's text and the facts to label (no judge's verdict).
    #[arg(long)]
    pub sheet: PathBuf,
    /// The first episode seed: the k-th episode recorded (tasks in file order) plays
    /// `seed + k`, so that tasks sharing a start page do not replay one walk.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Episodes per task.
    #[arg(long, default_value_t = 1)]
    pub episodes: u64,
    /// Only the bundled tasks whose id contains this.
    #[arg(long)]
    pub task: Option<String>,
    /// Episodes played at once.
    #[arg(long, default_value_t = 2)]
    pub concurrency: usize,
}

/// Records the episodes and writes the file and the sheet.
pub async fn run(common: &Common, args: RecordRandomArgs) -> anyhow::Result<ExitCode> {
    if args.out.exists() {
        bail!(
            "--out {}: already exists (it may hold reviewed labels); choose another path",
            args.out.display()
        );
    }
    if args.episodes == 0 {
        bail!("--episodes: must be at least 1");
    }
    let sites = SitesServer::start_with(IpAddr::V4(Ipv4Addr::LOCALHOST), None, Vec::new())
        .await
        .context("serving the practice sites")?;
    let bases = sites.bases().clone();
    let mut tasks: Vec<Arc<Task>> = Vec::new();
    for l in tasks::bundled_tasks(&bases) {
        let t = l
            .line
            .result
            .map_err(|e| anyhow::anyhow!("{}:{}: {e:?}", l.file, l.line.line))?;
        if args
            .task
            .as_deref()
            .is_none_or(|f| t.id.as_str().contains(f))
        {
            tasks.push(Arc::new(t));
        }
    }
    if tasks.is_empty() {
        bail!("--task: no bundled task matches");
    }
    let concurrency = args.concurrency.max(1);
    let pool = BrowserPool::launch(crate::setup::pool_config_for(
        common,
        concurrency,
        concurrency,
    )?)
    .await
    .context("cannot start Chromium")?;
    let runs: Vec<(Arc<Task>, u64)> = tasks
        .iter()
        .flat_map(|t| (0..args.episodes).map(move |_| t.clone()))
        .zip(args.seed..)
        .collect();
    let bar = crate::cmd::audit::bar(runs.len() as u64, "episodes")?;
    let mut recorded: Vec<(Arc<Task>, anyhow::Result<Recorded>)> = futures::stream::iter(runs)
        .map(|(t, seed)| {
            let (pool, bar, bases) = (&pool, &bar, &bases);
            async move {
                let r = record_random(pool, t.clone(), seed, bases).await;
                bar.set_message(t.id.to_string());
                bar.inc(1);
                (t, r.map_err(anyhow::Error::from))
            }
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    bar.finish_and_clear();
    pool.shutdown().await;
    drop(sites);
    recorded.sort_by(|a, b| {
        let key = |r: &anyhow::Result<Recorded>| r.as_ref().map(|r| r.spec.seed).unwrap_or(0);
        (a.0.id.as_str(), key(&a.1)).cmp(&(b.0.id.as_str(), key(&b.1)))
    });
    let (mut lines, mut sheet) = (String::new(), String::new());
    for (task, r) in &recorded {
        let r = r
            .as_ref()
            .map_err(|e| anyhow::anyhow!("{}: {e}", task.id))?;
        lines.push_str(&serde_json::to_string(&r.spec)?);
        lines.push('\n');
        write_sheet(&mut sheet, task, r)?;
    }
    std::fs::write(&args.out, lines).with_context(|| format!("writing {}", args.out.display()))?;
    std::fs::write(&args.sheet, sheet)
        .with_context(|| format!("writing {}", args.sheet.display()))?;
    println!(
        "recorded {} random episode(s) in {}; review them with {} (replace each null label by true or false, with a note)",
        recorded.len(),
        args.out.display(),
        args.sheet.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Final-page text shown per episode: enough to see where it ended.
const SHEET_TEXT: usize = 1500;

fn write_sheet(out: &mut String, task: &Task, r: &Recorded) -> anyhow::Result<()> {
    let s = &r.spec;
    writeln!(out, "## {}/{}-seed-{}\n", s.task, s.policy, s.seed)?;
    writeln!(out, "instruction: {}\n", task.instruction)?;
    for (i, a) in s.actions.iter().enumerate() {
        let why = s.steps.get(i).map(String::as_str).unwrap_or("");
        writeln!(out, "{:>3}. {a}    ({why})", i + 1)?;
    }
    writeln!(out, "\nvisited: {}", s.visited.join(" -> "))?;
    writeln!(
        out,
        "final answer: {}",
        s.final_answer.as_deref().unwrap_or("(none)")
    )?;
    let text: String = r.end.snapshot.text.chars().take(SHEET_TEXT).collect();
    writeln!(
        out,
        "final page {}:\n\n```\n{text}\n```\n",
        r.end.snapshot.url
    )?;
    writeln!(out, "facts to label:")?;
    for f in task.rubric.groups().iter().flat_map(|g| &g.facts) {
        if matches!(f.check, Check::Judge) {
            continue;
        }
        writeln!(out, "- {} ({}): {}", f.id, f.check.kind(), f.description)?;
    }
    writeln!(out)?;
    Ok(())
}
