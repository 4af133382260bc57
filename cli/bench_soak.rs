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

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use axum::Router;
use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use browser_pool::{Action, BrowserPool, Observation, PageEvent, PoolConfig, Session};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::Common;
use crate::bench_env::{
    EnvTask, Probes, Samples, bench_pool, bundled_tasks, miniwob_tasks, own_rss, practice_sites,
    run_episode, stats,
};

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

/// The hostile pages, each with what the pool must do about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum Hostile {
    /// 40 alerts in a row: answered, reported as one event.
    Alerts,
    /// 30 popups at once: at most `max_tabs` stay open, the rest are refused.
    Popups,
    /// A click handler that never returns: the script is stopped and reported.
    Spin,
    /// A download link: refused and reported.
    Download,
    /// A `file://` link: refused and reported.
    LocalFile,
    /// Built-ins replaced by broken ones: observed and driven all the same.
    Tampered,
    /// An image whose server never answers: neither `goto` nor clicks wait for it.
    HungImage,
    /// A 100,000-character title: clipped.
    HugeTitle,
    /// A page that hops between two sites every 100 ms: observations wait it out.
    Hopping,
    /// A redirect to itself, forever: the goto fails with Chromium's error, nothing hangs.
    Redirects,
    /// `window.print()`: no print dialog to wait on in a headless browser.
    Print,
    /// A page that reloads itself as soon as it has loaded.
    Reloading,
    /// Asks for geolocation, notifications and the camera: permission prompts nobody
    /// answers must not hold the page.
    Permissions,
}

const HOSTILE: [Hostile; 13] = [
    Hostile::Alerts,
    Hostile::Popups,
    Hostile::Spin,
    Hostile::Download,
    Hostile::LocalFile,
    Hostile::Tampered,
    Hostile::HungImage,
    Hostile::HugeTitle,
    Hostile::Hopping,
    Hostile::Redirects,
    Hostile::Print,
    Hostile::Reloading,
    Hostile::Permissions,
];

/// A page whose "Go" button sets the title to "went" after `script` ran.
fn with_go(title: &str, head: &str, go: &str) -> String {
    format!(
        r#"<!doctype html><html><head><title>{title}</title>{head}</head><body>
<h1>{title}</h1><button onclick="{go}; document.title = 'went'">Go</button></body></html>"#
    )
}

impl Hostile {
    /// Its name on the command line, in the report and in its page's path.
    fn name(self) -> String {
        use clap::ValueEnum;
        self.to_possible_value()
            .map(|v| v.get_name().to_string())
            .unwrap_or_default()
    }

    fn page(self) -> String {
        match self {
            Hostile::Alerts => with_go(
                "Alerts",
                "",
                "for (let i = 0; i < 40; i++) alert('storm ' + i)",
            ),
            Hostile::Popups => with_go(
                "Popups",
                "",
                "for (let i = 0; i < 30; i++) window.open('/plain', '_blank')",
            ),
            Hostile::Spin => with_go("Spin", "", "while (true) {}"),
            Hostile::Download => {
                r#"<!doctype html><title>Download</title><a href="/file.zip">Go</a>"#.into()
            }
            Hostile::LocalFile => {
                r#"<!doctype html><title>Local</title><a href="file:///etc/passwd">Go</a>"#.into()
            }
            Hostile::Tampered => with_go(
                "Tampered",
                "<script>Array.prototype.map = function () { return []; };
                  Array.from = function () { return []; };
                  String.prototype.trim = function () { return 'x'; };
                  window.getComputedStyle = function () { return { display: 'none' }; };
                  window.Symbol = undefined;</script>",
                "void 0",
            ),
            Hostile::HungImage => with_go("Hung image", "", "void 0")
                .replace("<body>", r#"<body><img src="/never" alt="never">"#),
            Hostile::HugeTitle => {
                r#"<!doctype html><title>t</title><script>document.title = 'Huge ' + 'x'.repeat(100000)</script>"#
                    .into()
            }
            Hostile::Hopping => r#"<!doctype html><title>Hopping</title><p>hopping</p><script>
setTimeout(() => {
  const u = new URL(location.href);
  u.hostname = u.hostname === 'localhost' ? '127.0.0.1' : 'localhost';
  location.href = u.href;
}, 100)</script>"#
                .into(),
            // A redirect, served by `serve_hostile`.
            Hostile::Redirects => String::new(),
            Hostile::Print => with_go("Print", "", "window.print()"),
            Hostile::Reloading => r#"<!doctype html><title>Reloading</title><p>reloading</p>
<script>addEventListener('load', () => setTimeout(() => location.reload(), 10))</script>"#
                .into(),
            Hostile::Permissions => with_go(
                "Permissions",
                "",
                "navigator.geolocation.getCurrentPosition(() => {}, () => {}); \
                 Notification.requestPermission(); \
                 navigator.mediaDevices && navigator.mediaDevices.getUserMedia({ video: true }).catch(() => {})",
            ),
        }
    }

    /// Whether the episode clicks the page's "Go".
    fn has_go(self) -> bool {
        !matches!(
            self,
            Hostile::HugeTitle | Hostile::Hopping | Hostile::Redirects | Hostile::Reloading
        )
    }

    /// What the pool must have done, from the observations before and after "Go".
    fn check(
        self,
        before: &Observation,
        after: &Observation,
        max_tabs: usize,
    ) -> Result<(), String> {
        let any = |f: fn(&PageEvent) -> bool| after.events.iter().any(f);
        let ok = match self {
            Hostile::Alerts => {
                after.title == "went" && any(|e| matches!(e, PageEvent::Dialog { .. }))
            }
            Hostile::Popups => {
                after.tabs.len() <= max_tabs && any(|e| matches!(e, PageEvent::Blocked { .. }))
            }
            Hostile::Spin => any(|e| matches!(e, PageEvent::ScriptStopped { .. })),
            Hostile::Download => any(|e| matches!(e, PageEvent::Download { .. })),
            Hostile::LocalFile => any(|e| matches!(e, PageEvent::Blocked { .. })),
            Hostile::Tampered => !before.elements.is_empty() && after.title == "went",
            Hostile::HungImage => after.title == "went",
            Hostile::HugeTitle => before.title.chars().count() == 300,
            // Checked as it opened: the goto reported the loop.
            Hostile::Hopping | Hostile::Reloading | Hostile::Redirects => true,
            Hostile::Print | Hostile::Permissions => after.title == "went",
        };
        if ok {
            Ok(())
        } else {
            Err(format!(
                "not handled as documented: title {:.60?}, {} tabs, {} events, the first {:?}",
                after.title,
                after.tabs.len(),
                after.events.len(),
                &after.events[..after.events.len().min(3)]
            ))
        }
    }
}

/// Serves the hostile pages, a plain page, a download and a URL that never answers.
async fn serve_hostile() -> anyhow::Result<(String, tokio::task::JoinHandle<()>)> {
    let mut app = Router::new()
        .route(
            "/plain",
            get(|| async { Html("<!doctype html><title>Plain</title><p>plain</p>") }),
        )
        .route(
            "/file.zip",
            get(|| async {
                (
                    [
                        (header::CONTENT_TYPE, "application/zip"),
                        (
                            header::CONTENT_DISPOSITION,
                            "attachment; filename=\"report.zip\"",
                        ),
                    ],
                    "PK-not-really-a-zip",
                )
                    .into_response()
            }),
        )
        .route("/never", get(std::future::pending::<String>));
    for h in HOSTILE {
        if h == Hostile::Redirects {
            app = app.route(
                "/redirects",
                get(|| async { axum::response::Redirect::temporary("/redirects") }),
            );
            continue;
        }
        let page = h.page();
        app = app.route(
            &format!("/{}", h.name()),
            get(move || std::future::ready(Html(page.clone()))),
        );
    }
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
    let base = format!("http://127.0.0.1:{}", listener.local_addr()?.port());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((base, task))
}

/// One hostile episode: the page, "Go" where it has one, the check, and a plain page after.
async fn hostile_episode(
    pool: &BrowserPool,
    base: &str,
    h: Hostile,
    max_tabs: usize,
) -> anyhow::Result<()> {
    let mut session = pool.lease().await.context("lease")?;
    let result = drive_hostile(&mut session, base, h, max_tabs).await;
    session.close().await;
    result
}

async fn drive_hostile(
    s: &mut Session,
    base: &str,
    h: Hostile,
    max_tabs: usize,
) -> anyhow::Result<()> {
    let opened = s
        .act(&Action::Goto(format!("{base}/{}", h.name())))
        .await
        .context("opening the page")?;
    match (h, opened.error) {
        (Hostile::Redirects, Some(e)) if e.contains("ERR_TOO_MANY_REDIRECTS") => {}
        (Hostile::Redirects, e) => bail!("a redirect loop was not reported: {e:?}"),
        (_, Some(e)) => bail!("opening the page: {e}"),
        (_, None) => {}
    }
    let before = s.observe().await.context("observing the page")?;
    let after = if h.has_go() {
        let go = before
            .elements
            .iter()
            .find(|e| e.label == "Go")
            .ok_or_else(|| anyhow!("no Go among {} elements", before.elements.len()))?;
        s.act(&browser_pool::parse_action(&format!("click({})", go.id))?)
            .await
            .context("clicking Go")?;
        s.observe().await.context("observing after Go")?
    } else {
        let mut last = s.observe().await.context("observing the page")?;
        for _ in 0..3 {
            last = s.observe().await.context("observing the page")?;
        }
        last
    };
    h.check(&before, &after, max_tabs).map_err(|e| anyhow!(e))?;
    let back = s
        .act(&Action::Goto(format!("{base}/plain")))
        .await
        .context("leaving for a plain page")?;
    let obs = s.observe().await.context("observing the plain page")?;
    if back.error.is_some() || obs.title != "Plain" {
        bail!(
            "not usable afterwards: {:?}, title {:?}",
            back.error,
            obs.title
        );
    }
    Ok(())
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
        own_open_files: std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count()),
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

    let bar = ProgressBar::new(args.episodes as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix:>6.bold} [{bar:32.cyan/blue}] {pos}/{len} {elapsed:>4} ETA {eta} {msg}",
        )?
        .progress_chars("=> "),
    );
    bar.set_prefix("soak");
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
                let (kind, result) = match plan(i, &args, &hostile, &ordinary) {
                    Plan::Ordinary(t) => {
                        let mut out = Samples::default();
                        let r = run_episode(
                            &pool,
                            t,
                            args.seed + i as u64,
                            Probes::None,
                            None,
                            &mut out,
                        )
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
                        hostile_episode(&pool, &base, h, max_tabs).await,
                    ),
                };
                {
                    let mut kinds = kinds.lock().unwrap_or_else(|p| p.into_inner());
                    let k = kinds.entry(kind.clone()).or_default();
                    k.episodes += 1;
                    k.ms.push(t0.elapsed().as_secs_f64() * 1e3);
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
