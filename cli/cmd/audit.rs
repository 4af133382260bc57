//! `surfgym tasks audit` and the exploration it shares with `surfgym judge eval`: every
//! task of a suite played for real (its reference solution step by step, its declared
//! perturbations), with a progress bar, on a pool and the practice sites of its own (no
//! database).

use std::net::{IpAddr, Ipv4Addr};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use browser_pool::BrowserPool;
use clap::Args;
use engine::InfraError;
use engine::SitesServer;
use engine::audit::{self, Exploration, Finding, labels};
use engine::judge::calibration::LabelledEpisode;
use futures::StreamExt;
use indicatif::ProgressBar;
use tasks::Task;

use crate::args::Common;

/// Which tasks to explore.
#[derive(Args, Clone)]
pub struct SuiteArgs {
    /// `bundled` (the practice sites' tasks), `miniwob` (the MiniWoB++ tasks the solver
    /// solves, their solution its actions), or a JSON Lines file of tasks with reference
    /// solutions (`{{shop}}`-style placeholders are filled with the practice sites'
    /// addresses). Repeatable. Default: bundled (and, for `judge eval`, miniwob too when
    /// MiniWoB++ is installed).
    #[arg(long)]
    pub suite: Vec<String>,
    /// Only the tasks whose id contains this.
    #[arg(long)]
    pub task: Option<String>,
    /// Trajectories played at once.
    #[arg(long, default_value_t = 2)]
    pub concurrency: usize,
    /// Seed of the MiniWoB++ episodes.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// `surfgym tasks audit`.
#[derive(Args)]
pub struct AuditArgs {
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// Also list the accepted findings with their reasons.
    #[arg(long)]
    pub verbose: bool,
}

/// A suite's explorations; the tasks whose exploration failed, with why; and the
/// reviewed episodes of its tasks, labelled, when asked for.
pub struct Explored {
    pub done: Vec<Exploration>,
    pub failed: Vec<(Arc<Task>, InfraError)>,
    pub reviewed: Vec<LabelledEpisode>,
}

/// The suite's tasks, served by `sites`.
fn load(sites: &SitesServer, args: &SuiteArgs, default: &[&str]) -> anyhow::Result<Vec<Arc<Task>>> {
    let mut suites = args.suite.clone();
    if suites.is_empty() {
        suites.extend(
            default
                .iter()
                .filter(|s| **s != "miniwob" || sites.bases().contains_key("miniwob"))
                .map(ToString::to_string),
        );
    }
    let mut out = Vec::new();
    for suite in &suites {
        match suite.as_str() {
            "bundled" => {
                for l in tasks::bundled_tasks(sites.bases()) {
                    let t = l
                        .line
                        .result
                        .map_err(|e| anyhow::anyhow!("{}:{}: {e:?}", l.file, l.line.line))?;
                    out.push(Arc::new(t));
                }
            }
            "miniwob" => {
                let base = sites.bases().get("miniwob").context(
                    "MiniWoB++ not found (run ./scripts/setup-python.sh or set SURFGYM_MINIWOB_DIR)",
                )?;
                for name in policy::miniwob::SOLVED {
                    let t = tasks::miniwob_task(name, base)
                        .map_err(|e| anyhow::anyhow!("miniwob task {name}: {e:?}"))?;
                    out.push(Arc::new(t));
                }
            }
            path => {
                let mut text = std::fs::read_to_string(path)
                    .with_context(|| format!("--suite {path}: not bundled, miniwob or a file"))?;
                for (site, base) in sites.bases() {
                    text = text.replace(&format!("{{{{{site}}}}}"), base);
                }
                for l in tasks::parse_jsonl(&text) {
                    let t = l
                        .result
                        .map_err(|e| anyhow::anyhow!("{path}:{}: {e:?}", l.line))?;
                    if t.reference_solution.is_empty() && t.setup != Some(tasks::Setup::MiniWob) {
                        bail!("{path}:{}: task {} has no reference solution", l.line, t.id);
                    }
                    out.push(Arc::new(t));
                }
            }
        }
    }
    if let Some(f) = &args.task {
        out.retain(|t| t.id.as_str().contains(f.as_str()));
    }
    if out.is_empty() {
        bail!("no task to explore (--suite, --task)");
    }
    Ok(out)
}

/// A bar for trajectories played one after another in a pool of its own.
pub fn bar(len: u64, prefix: &'static str) -> anyhow::Result<ProgressBar> {
    crate::progress::bar(len, prefix, 10, "{pos:>3}/{len:3} {msg} {elapsed_precise}")
}

/// The bundled reviewed episodes of `tasks`, checked against them: a line that does not
/// parse or check is the repository's error, reported as one.
fn reviewed_of(tasks: &[Arc<Task>]) -> anyhow::Result<Vec<(Arc<Task>, tasks::reviewed::Reviewed)>> {
    let mut out = Vec::new();
    for line in tasks::reviewed::bundled_reviewed() {
        let spec = line.spec.map_err(|e| anyhow::anyhow!("{}: {e}", line.at))?;
        let Some(task) = tasks.iter().find(|t| t.id.as_str() == spec.task) else {
            continue;
        };
        let r = spec.check(task).map_err(|e| {
            let e: Vec<String> = e
                .iter()
                .map(|e| format!("{}: {}", e.field, e.message))
                .collect();
            anyhow::anyhow!("{}: {}", line.at, e.join("; "))
        })?;
        out.push((task.clone(), r));
    }
    Ok(out)
}

/// Serves the sites, launches a pool and explores every task of the suite (`default`
/// suites when none is named); with `reviewed`, also replays the bundled reviewed episodes
/// of those tasks (the random policy's, labelled by a person).
pub async fn explore(
    common: &Common,
    args: &SuiteArgs,
    default: &[&str],
    reviewed: bool,
) -> anyhow::Result<Explored> {
    let extra = engine::find_miniwob(&common.data_dir)
        .map(|d| ("miniwob".to_string(), d))
        .into_iter()
        .collect();
    let sites = SitesServer::start_with(IpAddr::V4(Ipv4Addr::LOCALHOST), None, extra)
        .await
        .context("serving the practice sites")?;
    let tasks = load(&sites, args, default)?;
    // Only the bundled suite's tasks are the ones reviewed: a file's task may share an id.
    let bundled = if args.suite.is_empty() {
        default.contains(&"bundled")
    } else {
        args.suite.iter().any(|s| s == "bundled")
    };
    let to_review = if reviewed && bundled {
        reviewed_of(&tasks)?
    } else {
        Vec::new()
    };
    let concurrency = args.concurrency.max(1);
    let mut cfg = crate::setup::pool_config_for(common, concurrency, concurrency)?;
    cfg.set_of_marks = false;
    let pool = BrowserPool::launch(cfg)
        .await
        .context("cannot start Chromium")?;
    let bar = bar((tasks.len() + to_review.len()) as u64, "tasks")?;
    let seed = args.seed;
    let results: Vec<_> = futures::stream::iter(tasks)
        .map(|t| {
            let pool = &pool;
            let bar = &bar;
            async move {
                let r = audit::explore(pool, t.clone(), seed).await;
                bar.set_message(t.id.to_string());
                bar.inc(1);
                (t, r)
            }
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    let bases = sites.bases().clone();
    let replays: Vec<_> = futures::stream::iter(&to_review)
        .map(|(t, r)| {
            let (pool, bar, bases) = (&pool, &bar, &bases);
            async move {
                let end = audit::reviewed::replay_reviewed(pool, t, r, bases).await;
                bar.set_message(r.label());
                bar.inc(1);
                end.map(|end| labels::reviewed(t, r, &end))
            }
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    bar.finish_and_clear();
    pool.shutdown().await;
    drop(sites);
    let mut explored = Explored {
        done: Vec::new(),
        failed: Vec::new(),
        reviewed: replays.into_iter().collect::<Result<_, _>>()?,
    };
    explored.reviewed.sort_by(|a, b| a.label.cmp(&b.label));
    for (t, r) in results {
        match r {
            Ok(e) => explored.done.push(e),
            Err(e) => explored.failed.push((t, e)),
        }
    }
    explored.done.sort_by(|a, b| a.task.id.cmp(&b.task.id));
    Ok(explored)
}

/// `surfgym tasks audit`: exits non-zero on any finding the task file does not accept, and
/// on any task that could not be explored.
pub async fn run(common: &Common, args: AuditArgs) -> anyhow::Result<ExitCode> {
    let explored = explore(common, &args.suite, &["bundled"], false).await?;
    let mut all: Vec<Finding> = Vec::new();
    for ex in &explored.done {
        all.extend(
            audit::findings(ex)
                .await
                .map_err(|e| anyhow::anyhow!("{}: {e}", ex.task.id))?,
        );
    }
    let mut broken = 0;
    for (t, e) in &explored.failed {
        match audit::infra_finding(t, e) {
            Some(f) => all.push(f),
            None => {
                broken += 1;
                println!("{}: could not be explored: {e}", t.id);
            }
        }
    }
    let open: Vec<&Finding> = all.iter().filter(|f| !f.accepted).collect();
    for f in &all {
        if f.accepted && !args.verbose {
            continue;
        }
        let mark = if f.accepted { "accepted" } else { "FINDING " };
        let fact = f
            .fact
            .as_deref()
            .map(|x| format!(" {x}"))
            .unwrap_or_default();
        println!("{mark} {}: {}{fact}: {}", f.task, f.kind, f.detail);
    }
    let tasks = explored.done.len() + explored.failed.len();
    let trajectories: usize = explored
        .done
        .iter()
        .map(|e| e.prefixes.len() + e.perturbed.len())
        .sum();
    println!(
        "audited {tasks} task(s) on {trajectories} trajectories: {} finding(s), {} accepted, {} open{}",
        all.len(),
        all.len() - open.len(),
        open.len(),
        if broken > 0 {
            format!(", {broken} task(s) not explored")
        } else {
            String::new()
        }
    );
    Ok(if open.is_empty() && broken == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
