//! `surfgym bench sessions`: what the environment-session API costs a client that drives
//! the loop itself (a Python trainer), against the same sessions driven in-process.
//!
//! One engine, one browser pool, one database, and the API served in-process on
//! loopback; in one run:
//! 1. latency, one session at a time: the bundled tasks' reference solutions played as
//!    sessions, alternately in-process (`Engine::open_session` / `step_session`) and over
//!    HTTP (`POST /api/sessions`, `.../step`, JSON with base64 screenshots), so both
//!    see the same machine load; reset and step p50 of each, and the API's overhead as
//!    a share of the in-process step;
//! 2. throughput over the API: `--concurrent` clients each looping sessions for
//!    `--seconds`; sessions/s, steps/s, the browsers' memory and this process's.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use engine::sessions::{Client, Dialect, ObserveOptions, OpenRequest, TaskChoice};
use engine::{Engine, RunnerConfig};
use policy::PolicyRegistry;
use serde::Serialize;
use serde_json::{Value, json};

use super::bench_pool;
use super::episode::practice_sites;
use super::procfs::{loadavg, own_rss};
use super::stats::{Stats, ms, stats};
use crate::args::Common;

/// Options of the sessions benchmark.
#[derive(Args)]
pub struct SessionsArgs {
    /// Latency phase: rounds over the tasks (each task played once per path per round).
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Latency phase: bundled tasks to play.
    #[arg(long, default_value_t = 6)]
    pub tasks: usize,
    /// Throughput phase: clients looping sessions at once over the API (0: skip it).
    #[arg(long, default_value_t = 32)]
    pub concurrent: usize,
    /// Throughput phase: seconds it runs.
    #[arg(long, default_value_t = 30.0)]
    pub seconds: f64,
    /// Write every figure as JSON here too.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
}

#[derive(Debug, Serialize)]
struct PathTimes {
    reset: Stats,
    step: Stats,
    steps: usize,
    failures: usize,
}

#[derive(Debug, Serialize)]
struct Throughput {
    concurrent: usize,
    seconds: f64,
    sessions: usize,
    steps: usize,
    failures: usize,
    sessions_per_s: f64,
    steps_per_s: f64,
    step: Stats,
    browsers_pss_mb: f64,
    server_rss_mb: f64,
}

#[derive(Debug, Serialize)]
struct Report {
    cpus: usize,
    in_process: PathTimes,
    api: PathTimes,
    step_overhead: f64,
    reset_overhead: f64,
    throughput: Option<Throughput>,
    loadavg_at_end: Vec<f64>,
}

/// A task and the actions that solve it.
struct Play {
    task: String,
    actions: Vec<String>,
}

/// Runs the benchmark and prints its figures.
pub async fn run(common: &Common, a: SessionsArgs) -> anyhow::Result<ExitCode> {
    if a.rounds == 0 || a.tasks == 0 {
        bail!("--rounds and --tasks: must be at least 1");
    }
    let db = crate::db::open(common).await?;
    let sites = practice_sites(common).await?;
    let mut pool = bench_pool(common)?;
    let contexts = a.concurrent.max(1);
    pool.browsers = contexts.div_ceil(8);
    pool.contexts_per_browser = 8;
    let engine = Engine::new(
        db.store.clone(),
        pool,
        RunnerConfig::for_this_process(),
        PolicyRegistry::builtin(),
    );
    let report = engine.register_bundled(sites.bases()).await?;
    engine.set_session_limits(engine::sessions::SessionLimits {
        max_sessions: contexts,
        per_client: contexts,
        ..engine.session_limits()
    });
    let plays: Vec<Play> = tasks::bundled_tasks(sites.bases())
        .into_iter()
        .filter_map(|l| l.line.result.ok())
        .filter(|t| t.setup.is_none() && !t.reference_solution.is_empty())
        .take(a.tasks)
        .map(|t| Play {
            task: t.id.to_string(),
            actions: t
                .reference_solution
                .iter()
                .map(ToString::to_string)
                .collect(),
        })
        .collect();
    if plays.is_empty() {
        bail!(
            "no bundled task with a reference solution ({} registered)",
            report.registered
        );
    }
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
    let base = format!("http://{}", listener.local_addr()?);
    let server = tokio::spawn(web::serve(
        listener,
        web::AppState {
            engine: engine.clone(),
        },
    ));
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "bench sessions: {cpus} CPUs, {} tasks x {} rounds per path, then {} clients for {} s; load average {:?}",
        plays.len(),
        a.rounds,
        a.concurrent,
        a.seconds,
        loadavg()
    );
    // A warm-up of each path: the first session starts the browser.
    play_in_process(&engine, &plays[0]).await?;
    play_api(&http, &base, &plays[0]).await?;
    let (mut local, mut api) = (Samples::default(), Samples::default());
    for _ in 0..a.rounds {
        for p in &plays {
            local.absorb(play_in_process(&engine, p).await);
            api.absorb(play_api(&http, &base, p).await);
        }
    }
    let (local, api) = (local.summary(), api.summary());
    let step_overhead = api.step.p50 / local.step.p50 - 1.0;
    let reset_overhead = api.reset.p50 / local.reset.p50 - 1.0;
    println!(
        "{:<12} {:>8} {:>10} {:>10} {:>10} {:>10} {:>6}",
        "path", "steps", "reset p50", "reset p90", "step p50", "step p90", "fails"
    );
    for (name, t) in [("in-process", &local), ("API (HTTP)", &api)] {
        println!(
            "{name:<12} {:>8} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>6}",
            t.steps, t.reset.p50, t.reset.p90, t.step.p50, t.step.p90, t.failures
        );
    }
    println!(
        "API overhead at p50: step {:+.1}% (goal: at most +10%), reset {:+.1}%",
        step_overhead * 100.0,
        reset_overhead * 100.0
    );
    let throughput = if a.concurrent > 0 {
        Some(throughput(&engine, &http, &base, &plays, &a).await?)
    } else {
        None
    };
    server.abort();
    engine.shutdown().await;
    let report = Report {
        cpus,
        in_process: local,
        api,
        step_overhead,
        reset_overhead,
        throughput,
        loadavg_at_end: loadavg(),
    };
    if let Some(path) = &a.json {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Default)]
struct Samples {
    reset: Vec<f64>,
    step: Vec<f64>,
    failures: usize,
}

impl Samples {
    fn absorb(&mut self, other: anyhow::Result<Samples>) {
        match other {
            Ok(o) => {
                self.reset.extend(o.reset);
                self.step.extend(o.step);
                self.failures += o.failures;
            }
            Err(e) => {
                eprintln!("a session failed: {e:#}");
                self.failures += 1;
            }
        }
    }

    fn summary(&self) -> PathTimes {
        PathTimes {
            reset: stats(&self.reset),
            step: stats(&self.step),
            steps: self.step.len(),
            failures: self.failures,
        }
    }
}

/// Plays a task's solution through the engine directly.
async fn play_in_process(engine: &Engine, p: &Play) -> anyhow::Result<Samples> {
    let client = Client::local();
    let t = Instant::now();
    let snap = engine
        .open_session(
            &client,
            OpenRequest {
                task: TaskChoice::Registered(p.task.clone()),
                seed: 0,
                max_steps: None,
                dialect: Dialect::Surfgym,
                observe: ObserveOptions::default(),
            },
        )
        .await?;
    let mut out = Samples {
        reset: vec![ms(t.elapsed())],
        ..Default::default()
    };
    for action in &p.actions {
        let t = Instant::now();
        let step = engine
            .step_session(&client, snap.session_id, action)
            .await?;
        out.step.push(ms(t.elapsed()));
        if step.ending.is_some() {
            return Ok(out);
        }
    }
    engine.close_session(&client, snap.session_id).await?;
    Ok(out)
}

async fn post(http: &reqwest::Client, url: &str, body: &Value) -> anyhow::Result<Value> {
    let resp = http
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .with_context(|| format!("POST {url}"))?;
    let status = resp.status();
    let v: Value = resp.json().await?;
    if !status.is_success() {
        bail!("POST {url}: {status}: {v}");
    }
    Ok(v)
}

/// Plays a task's solution over the API, as a client would.
async fn play_api(http: &reqwest::Client, base: &str, p: &Play) -> anyhow::Result<Samples> {
    let t = Instant::now();
    let opened = post(
        http,
        &format!("{base}/api/sessions"),
        &json!({"task_id": p.task}),
    )
    .await?;
    let mut out = Samples {
        reset: vec![ms(t.elapsed())],
        ..Default::default()
    };
    let id = opened["session_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    for action in &p.actions {
        let t = Instant::now();
        let step = post(
            http,
            &format!("{base}/api/sessions/{id}/step"),
            &json!({"action": action}),
        )
        .await?;
        out.step.push(ms(t.elapsed()));
        if step["terminated"] == true || step["truncated"] == true {
            return Ok(out);
        }
    }
    http.delete(format!("{base}/api/sessions/{id}"))
        .header("content-type", "application/json")
        .send()
        .await?;
    Ok(out)
}

/// `--concurrent` clients looping sessions over the API for `--seconds`.
async fn throughput(
    engine: &Engine,
    http: &reqwest::Client,
    base: &str,
    plays: &[Play],
    a: &SessionsArgs,
) -> anyhow::Result<Throughput> {
    let plays = Arc::new(
        plays
            .iter()
            .map(|p| (p.task.clone(), p.actions.clone()))
            .collect::<Vec<_>>(),
    );
    let deadline = Instant::now() + Duration::from_secs_f64(a.seconds);
    let started = Instant::now();
    let workers = (0..a.concurrent).map(|w| {
        let (http, base, plays) = (http.clone(), base.to_string(), plays.clone());
        tokio::spawn(async move {
            let mut done = Samples::default();
            let mut sessions = 0usize;
            let mut i = w;
            while Instant::now() < deadline {
                let (task, actions) = &plays[i % plays.len()];
                i += 1;
                let play = Play {
                    task: task.clone(),
                    actions: actions.clone(),
                };
                let r = play_api(&http, &base, &play).await;
                sessions += usize::from(r.is_ok());
                done.absorb(r);
            }
            (sessions, done)
        })
    });
    // Memory while every client is in a session.
    let sampler = {
        let engine = engine.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs_f64(a_half(deadline))).await;
            let pool = engine.pool().await.ok()?;
            Some((pool.memory().await.pss as f64 / 1e6, own_rss() as f64 / 1e6))
        })
    };
    let results = futures::future::join_all(workers).await;
    let elapsed = started.elapsed().as_secs_f64();
    let (mut sessions, mut all) = (0, Samples::default());
    for r in results {
        let (s, d) = r?;
        sessions += s;
        all.absorb(Ok(d));
    }
    let (pss, rss) = sampler.await?.unwrap_or((f64::NAN, f64::NAN));
    let t = Throughput {
        concurrent: a.concurrent,
        seconds: elapsed,
        sessions,
        steps: all.step.len(),
        failures: all.failures,
        sessions_per_s: sessions as f64 / elapsed,
        steps_per_s: all.step.len() as f64 / elapsed,
        step: stats(&all.step),
        browsers_pss_mb: pss,
        server_rss_mb: rss,
    };
    println!(
        "{} clients over the API for {:.0} s: {} sessions ({:.2}/s), {} steps ({:.1}/s), step p50 {:.0} ms p90 {:.0} ms, {} failures; browsers {:.0} MB PSS, this process {:.0} MB RSS",
        t.concurrent,
        t.seconds,
        t.sessions,
        t.sessions_per_s,
        t.steps,
        t.steps_per_s,
        t.step.p50,
        t.step.p90,
        t.failures,
        t.browsers_pss_mb,
        t.server_rss_mb
    );
    Ok(t)
}

/// Seconds until half-way to `deadline`.
fn a_half(deadline: Instant) -> f64 {
    deadline
        .saturating_duration_since(Instant::now())
        .as_secs_f64()
        / 2.0
}
