//! `surfgym bench api`: response times of the API's lists, aggregates and compares, of the
//! server-sent events' first event, and of the dashboard pages' first render (the page's
//! HTML and scripts, then the data its script asks for first, fetched at once as a browser
//! does), against the real server: started in-process on the database, or `--url`.
//! Prints p50/p95/max per endpoint; what it times is the table in `endpoints`.

mod endpoints;
mod targets;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use engine::Engine;
use engine::RunnerConfig;
use policy::{LatencyModel, PolicyRegistry};
use serde::Serialize;

use crate::args::Common;
use crate::bench::stats::{ms, percentile};
use endpoints::{Class, ENDPOINTS, Endpoint};
use targets::Targets;

/// What to time.
#[derive(Args)]
pub struct ApiArgs {
    /// A running server to measure (default: start one in-process on the database).
    #[arg(long)]
    url: Option<String>,
    /// Timed requests per endpoint (after one untimed warm-up).
    #[arg(long, default_value_t = 30)]
    requests: usize,
    /// Only endpoints whose name contains this.
    #[arg(long)]
    only: Option<String>,
    /// The p95 the lists, aggregates and compares must stay under, ms (exit 1 if not).
    #[arg(long, default_value_t = 200.0)]
    target_ms: f64,
    /// Print JSON lines instead of a table.
    #[arg(long = "json-lines")]
    json: bool,
}

/// One endpoint's figures.
#[derive(Debug, Serialize)]
struct Row {
    name: &'static str,
    class: &'static str,
    n: usize,
    p50_ms: f64,
    p95_ms: f64,
    max_ms: f64,
    bytes: usize,
    over_target: bool,
}

/// Reads a response to its end (or, for a stream, to its first event); returns its size.
async fn fetch(client: &reqwest::Client, url: &str, stream: bool) -> anyhow::Result<usize> {
    let mut r = client
        .get(url)
        .send()
        .await
        .with_context(|| format!("GET {url}"))?;
    if !r.status().is_success() {
        bail!("GET {url}: {}", r.status());
    }
    let mut size = 0;
    let mut seen = Vec::new();
    while let Some(chunk) = r.chunk().await? {
        size += chunk.len();
        if stream {
            seen.extend_from_slice(&chunk);
            // An event ends at a blank line.
            if seen.windows(2).any(|w| w == b"\n\n") {
                return Ok(size);
            }
        }
    }
    Ok(size)
}

/// One render of an endpoint: its first paths in turn, then the rest at once.
async fn once(
    client: &reqwest::Client,
    base: &str,
    e: &Endpoint,
    paths: &(Vec<String>, Vec<String>),
) -> anyhow::Result<(Duration, usize)> {
    let start = Instant::now();
    let mut size = 0;
    for p in &paths.0 {
        size += fetch(client, &format!("{base}{p}"), e.class == Class::Stream).await?;
    }
    let urls: Vec<String> = paths.1.iter().map(|p| format!("{base}{p}")).collect();
    let rest = futures::future::try_join_all(urls.iter().map(|u| fetch(client, u, false))).await?;
    size += rest.iter().sum::<usize>();
    Ok((start.elapsed(), size))
}

/// The engine an in-process server stands on: the database only (no browser is started
/// and no campaign is scheduled: this server only answers reads).
fn engine(common: &Common, store: store::Store) -> Engine {
    let policies = PolicyRegistry::with_simulated(LatencyModel {
        median: Duration::from_millis(common.sim_latency_ms),
        sigma: common.sim_sigma,
        batch_overhead: Duration::from_millis(20),
    });
    Engine::new(
        store,
        browser_pool::PoolConfig::new(&common.chromium),
        RunnerConfig::for_this_process(),
        policies,
    )
}

/// Runs the benchmark.
pub async fn run(common: &Common, a: ApiArgs) -> anyhow::Result<ExitCode> {
    if a.requests == 0 {
        bail!("--requests: must be at least 1");
    }
    let mut server = None;
    let base = match &a.url {
        Some(u) => u.trim_end_matches('/').to_string(),
        None => {
            let db = crate::db::open(common).await?;
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
            let addr = listener.local_addr()?;
            let state = web::AppState {
                engine: engine(common, db.store.clone()),
            };
            server = Some(tokio::spawn(web::serve(listener, state)));
            format!("http://{addr}")
        }
    };
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()?;
    let targets = Targets::find(&client, &base).await?;
    let all = client
        .get(format!("{base}/api/episodes?limit=1"))
        .send()
        .await?
        .json::<serde_json::Value>()
        .await?;
    if !a.json {
        println!(
            "{base}: {} episodes, {} requests per endpoint after a warm-up, in rounds; \
             load average {:?}",
            all["total"],
            a.requests,
            crate::bench::procfs::loadavg()
        );
        println!(
            "{:<28} {:<9} {:>4} {:>9} {:>9} {:>9} {:>9}",
            "endpoint", "class", "n", "p50 ms", "p95 ms", "max ms", "bytes"
        );
    }
    // What to time, placeholders filled; each warmed up once.
    let mut timed = Vec::new();
    for e in ENDPOINTS {
        if a.only.as_deref().is_some_and(|o| !e.name.contains(o)) {
            continue;
        }
        let fill = |ps: &[&str]| ps.iter().map(|p| targets.fill(p)).collect();
        match (fill(e.first), fill(e.then)) {
            (Ok(f), Ok(t)) => {
                let paths = (f, t);
                once(&client, &base, e, &paths)
                    .await
                    .with_context(|| e.name)?;
                timed.push((e, paths, Vec::with_capacity(a.requests), 0));
            }
            (Err(why), _) | (_, Err(why)) => {
                if !a.json {
                    println!("{:<28} {:<9} skipped: {why}", e.name, e.class.as_str());
                }
            }
        }
    }
    // Round after round over every endpoint rather than one endpoint after another: on a
    // shared machine a burst of load then spreads over all of them, not onto one.
    for _ in 0..a.requests {
        for (e, paths, times, bytes) in &mut timed {
            let (t, b) = once(&client, &base, e, paths).await?;
            times.push(ms(t));
            *bytes = b;
        }
    }
    let mut over = 0;
    for (e, _, mut times, bytes) in timed {
        times.sort_by(f64::total_cmp);
        let p95 = percentile(&times, 0.95);
        let row = Row {
            name: e.name,
            class: e.class.as_str(),
            n: times.len(),
            p50_ms: percentile(&times, 0.5),
            p95_ms: p95,
            max_ms: times.last().copied().unwrap_or(f64::NAN),
            bytes,
            over_target: e.class.targeted() && p95 > a.target_ms,
        };
        over += usize::from(row.over_target);
        if a.json {
            println!("{}", serde_json::to_string(&row)?);
        } else {
            println!(
                "{:<28} {:<9} {:>4} {:>9.1} {:>9.1} {:>9.1} {:>9}{}",
                row.name,
                row.class,
                row.n,
                row.p50_ms,
                row.p95_ms,
                row.max_ms,
                row.bytes,
                if row.over_target { "  over target" } else { "" }
            );
        }
    }
    if !a.json {
        println!("load average after: {:?}", crate::bench::procfs::loadavg());
    }
    if let Some(s) = server {
        s.abort();
    }
    if over > 0 {
        if !a.json {
            println!(
                "{over} list/aggregate/compare endpoints over the {} ms p95 target",
                a.target_ms
            );
        }
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
