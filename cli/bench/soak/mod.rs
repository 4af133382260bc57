//! `surfgym bench soak`: many episodes through one pool, ordinary and hostile pages mixed,
//! to show that the pool neither leaks nor wedges over a long campaign.
//!
//! Ordinary episodes are BrowserGym's ten MiniWoB++ tasks (solver or random, as `bench
//! env`) and the bundled tasks' reference solutions. Every `--hostile-every`th episode
//! instead meets one of the pages that break naive gyms (an alert storm, a popup storm, a
//! script that never yields, a download, a local-file link, replaced built-ins, an image
//! that never loads, a huge title, a page hopping between sites), checks that the pool
//! handled it the documented way, and checks that the session is still usable afterwards.
//! Every `--sample-every` episodes it records what would grow if something leaked: this
//! process's memory, open files and live tasks, and the browsers' processes and memory.
//! It exits non-zero when any episode failed.

mod hostile;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use browser_pool::{BrowserPool, PoolConfig};
use clap::Args;
use serde::Serialize;

use self::hostile::{HOSTILE, Hostile, hostile_episode, serve_hostile};
use super::bench_pool;
use super::episode::{
    EnvTask, Probes, Samples, bundled_tasks, miniwob_tasks, practice_sites, run_episode,
};
use super::procfs::{own_open_files, own_rss};
use super::stats::{ms, stats};
use crate::args::Common;

/// Options of the soak benchmark.
#[derive(Args)]
pub struct SoakArgs {
    /// Episodes to run in all.
    #[arg(long, default_value_t = 600)]
    pub episodes: usize,
    /// Episodes at once (browser contexts in use).
    // Same id as the global `--contexts`, which then stays out of this command.
    #[arg(long, default_value_t = 4)]
    pub contexts: usize,
    /// Contexts per browser process.
    #[arg(long, default_value_t = 4)]
    pub per_browser: usize,
    /// Resources are sampled every this many episodes.
    #[arg(long, default_value_t = 50)]
    pub sample_every: usize,
    /// One episode in this many meets a hostile page (the others: MiniWoB++ and bundled
    /// tasks).
    #[arg(long, default_value_t = 3)]
    pub hostile_every: usize,
    /// The hostile pages to use, comma-separated (default: all of them).
    #[arg(long, value_delimiter = ',', value_enum)]
    pub hostile: Vec<Hostile>,
    /// Base seed of the episodes.
    #[arg(long, default_value_t = 2026)]
    pub seed: u64,
    /// Write every figure as JSON here too.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// What grows when something leaks, sampled as episodes finish.
#[derive(Debug, Clone, Serialize)]
struct Sample {
    episodes: usize,
    at_s: f64,
    /// Sessions leased at that moment.
    leased: usize,
    browsers_pss_mb: f64,
    browser_processes: usize,
    own_rss_mb: f64,
    own_open_files: usize,
    own_tasks: usize,
    recycled: u64,
    relaunches: u64,
}

/// The resources now, after `episodes` episodes.
async fn sample(pool: &BrowserPool, episodes: usize, start: Instant) -> Sample {
    let mem = pool.memory().await;
    let stats = pool.stats();
    Sample {
        episodes,
        at_s: start.elapsed().as_secs_f64(),
        leased: stats.leased,
        browsers_pss_mb: mem.pss as f64 / 1e6,
        browser_processes: mem.processes,
        own_rss_mb: own_rss() as f64 / 1e6,
        own_open_files: own_open_files(),
        own_tasks: tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks(),
        recycled: stats.recycled,
        relaunches: stats.relaunches,
    }
}

/// Episodes of one kind: how many, how long, which failed and why.
#[derive(Debug, Default, Serialize)]
struct Kind {
    episodes: usize,
    failures: Vec<String>,
    #[serde(skip)]
    ms: Vec<f64>,
    p50_ms: f64,
}

/// Everything the soak measured, for `--json`.
#[derive(Serialize)]
struct Report {
    episodes: usize,
    contexts: usize,
    seconds: f64,
    kinds: BTreeMap<String, Kind>,
    samples: Vec<Sample>,
    idle_before: Sample,
    idle_after: Sample,
}

/// What episode `i` is.
enum Plan<'a> {
    Ordinary(&'a EnvTask),
    Hostile(Hostile),
}

fn plan<'a>(i: usize, args: &SoakArgs, hostile: &[Hostile], ordinary: &'a [EnvTask]) -> Plan<'a> {
    let every = args.hostile_every.max(1);
    if i % every == every - 1 || ordinary.is_empty() {
        Plan::Hostile(hostile[(i / every) % hostile.len()])
    } else {
        Plan::Ordinary(&ordinary[(i - i / every) % ordinary.len()])
    }
}

/// Runs one planned episode; returns its kind (its row in the report) and how it ended.
async fn episode(
    pool: &BrowserPool,
    base: &str,
    planned: Plan<'_>,
    seed: u64,
    max_tabs: usize,
) -> (String, anyhow::Result<()>) {
    match planned {
        Plan::Ordinary(t) => {
            let mut out = Samples::default();
            let r = run_episode(pool, t, seed, Probes::None, None, &mut out)
                .await
                .map(|_| ());
            let label = if t.name().starts_with("miniwob.") {
                "miniwob"
            } else {
                "bundled"
            };
            (label.to_string(), r)
        }
        Plan::Hostile(h) => (
            format!("hostile: {}", h.name()),
            hostile_episode(pool, base, h, max_tabs).await,
        ),
    }
}

/// The soak's pool: `--contexts` contexts in browsers of `--per-browser` each.
fn pool_config(common: &Common, args: &SoakArgs) -> anyhow::Result<PoolConfig> {
    let mut cfg = bench_pool(common)?;
    let per = args.per_browser.clamp(1, args.contexts.max(1));
    cfg.contexts_per_browser = per;
    cfg.browsers = args.contexts.max(1).div_ceil(per);
    Ok(cfg)
}

/// Runs the soak and prints its tables; fails when any episode failed.
pub async fn run(common: &Common, args: SoakArgs) -> anyhow::Result<ExitCode> {
    if args.episodes == 0 || args.contexts == 0 || args.sample_every == 0 {
        bail!("--episodes, --contexts and --sample-every must be at least 1");
    }
    let sites = practice_sites(common).await?;
    let mut ordinary = match sites.bases().get("miniwob") {
        Some(base) => miniwob_tasks(base)?,
        None => {
            eprintln!(
                "warning: MiniWoB++ not found (run ./scripts/setup-python.sh): ordinary episodes are the bundled tasks only"
            );
            Vec::new()
        }
    };
    ordinary.extend(bundled_tasks(sites.bases(), None));
    let hostile: Arc<[Hostile]> = if args.hostile.is_empty() {
        HOSTILE.into()
    } else {
        args.hostile.clone().into()
    };
    let (base, server) = serve_hostile().await?;
    let cfg = pool_config(common, &args)?;
    let max_tabs = cfg.max_tabs;
    println!(
        "bench soak: {} episodes, {} at once on {} browser(s) x {} contexts, recycled after {:?} sessions; one in {} hostile ({} kinds), the rest over {} tasks",
        args.episodes,
        args.contexts,
        cfg.browsers,
        cfg.contexts_per_browser,
        cfg.recycle_after,
        args.hostile_every.max(1),
        hostile.len(),
        ordinary.len()
    );
    let pool = BrowserPool::launch(cfg)
        .await
        .context("launching the pool")?;
    let start = Instant::now();
    pool.standby_ready().await;
    let idle_before = sample(&pool, 0, start).await;

    let bar = crate::progress::bar(
        args.episodes as u64,
        "soak",
        6,
        "{pos}/{len} {elapsed:>4} ETA {eta} {msg}",
    )?;
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let kinds: Arc<Mutex<BTreeMap<String, Kind>>> = Arc::default();
    let samples: Arc<Mutex<Vec<Sample>>> = Arc::default();
    let args = Arc::new(args);
    let ordinary = Arc::new(ordinary);
    let mut workers = Vec::new();
    for _ in 0..args.contexts {
        let (pool, args, ordinary, hostile, base) = (
            pool.clone(),
            args.clone(),
            ordinary.clone(),
            hostile.clone(),
            base.clone(),
        );
        let (next, done, failed, kinds, samples, bar) = (
            next.clone(),
            done.clone(),
            failed.clone(),
            kinds.clone(),
            samples.clone(),
            bar.clone(),
        );
        workers.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= args.episodes {
                    break;
                }
                let t0 = Instant::now();
                let planned = plan(i, &args, &hostile, &ordinary);
                let seed = args.seed + i as u64;
                let (kind, result) = episode(&pool, &base, planned, seed, max_tabs).await;
                {
                    let mut kinds = kinds.lock().unwrap_or_else(|p| p.into_inner());
                    let k = kinds.entry(kind.clone()).or_default();
                    k.episodes += 1;
                    k.ms.push(ms(t0.elapsed()));
                    if let Err(e) = result {
                        failed.fetch_add(1, Ordering::SeqCst);
                        let e = format!("episode {i}: {e:#}");
                        bar.suspend(|| eprintln!("FAILED {kind} {e}"));
                        k.failures.push(e);
                    }
                }
                let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                bar.set_position(n as u64);
                bar.set_message(format!("{} failed", failed.load(Ordering::SeqCst)));
                if n % args.sample_every == 0 || n == args.episodes {
                    let s = sample(&pool, n, start).await;
                    samples.lock().unwrap_or_else(|p| p.into_inner()).push(s);
                }
            }
        }));
    }
    for w in workers {
        w.await.context("a soak worker panicked")?;
    }
    bar.finish();
    let seconds = start.elapsed().as_secs_f64();
    // Closed sessions' contexts and renderers take a moment to go.
    tokio::time::sleep(Duration::from_secs(2)).await;
    pool.standby_ready().await;
    let idle_after = sample(&pool, args.episodes, start).await;
    pool.shutdown().await;
    server.abort();

    let mut kinds = std::mem::take(&mut *kinds.lock().unwrap_or_else(|p| p.into_inner()));
    for k in kinds.values_mut() {
        k.p50_ms = stats(&k.ms).p50;
    }
    let mut samples = std::mem::take(&mut *samples.lock().unwrap_or_else(|p| p.into_inner()));
    samples.sort_by_key(|s| s.episodes);
    let report = Report {
        episodes: args.episodes,
        contexts: args.contexts,
        seconds,
        kinds,
        samples,
        idle_before,
        idle_after,
    };
    print_report(&report);
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let failures = failed.load(Ordering::SeqCst);
    if failures > 0 {
        eprintln!("{failures} episode(s) failed (listed above)");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// The soak's tables: episodes by kind, the resource samples, and how they grew.
fn print_report(r: &Report) {
    println!(
        "\n{} episodes in {:.0} s ({:.1} episodes/s), {} at once\n",
        r.episodes,
        r.seconds,
        r.episodes as f64 / r.seconds,
        r.contexts
    );
    println!("| kind | episodes | failed | p50 ms |\n|---|---|---|---|");
    for (name, k) in &r.kinds {
        println!(
            "| {name} | {} | {} | {:.0} |",
            k.episodes,
            k.failures.len(),
            k.p50_ms
        );
    }
    for (name, k) in &r.kinds {
        for f in k.failures.iter().take(10) {
            println!("failed, {name}: {f}");
        }
    }
    println!(
        "\n| episodes | s | leased | browsers PSS MB | browser processes | own RSS MB | own open files | own tasks | recycled | relaunched |\n|---|---|---|---|---|---|---|---|---|---|"
    );
    let row = |label: String, s: &Sample| {
        println!(
            "| {label} | {:.0} | {} | {:.0} | {} | {:.0} | {} | {} | {} | {} |",
            s.at_s,
            s.leased,
            s.browsers_pss_mb,
            s.browser_processes,
            s.own_rss_mb,
            s.own_open_files,
            s.own_tasks,
            s.recycled,
            s.relaunches
        );
    };
    row("idle, before".into(), &r.idle_before);
    for s in &r.samples {
        row(s.episodes.to_string(), s);
    }
    row("idle, after".into(), &r.idle_after);
    // Growth past warm-up: the first sample has the caches and pools filled.
    if let (Some(first), Some(last)) = (r.samples.first(), r.samples.last())
        && last.episodes > first.episodes
    {
        let per100 = 100.0 / (last.episodes - first.episodes) as f64;
        println!(
            "\nfrom episode {} to {}: own RSS {:+.1} MB per 100 episodes, open files {:+}, tasks {:+}",
            first.episodes,
            last.episodes,
            (last.own_rss_mb - first.own_rss_mb) * per100,
            last.own_open_files as i64 - first.own_open_files as i64,
            last.own_tasks as i64 - first.own_tasks as i64,
        );
    }
    println!(
        "idle before and after: browser processes {} → {}, own open files {} → {}, own tasks {} → {}",
        r.idle_before.browser_processes,
        r.idle_after.browser_processes,
        r.idle_before.own_open_files,
        r.idle_after.own_open_files,
        r.idle_before.own_tasks,
        r.idle_after.own_tasks
    );
}
