//! What the commands that run campaigns stand on: the browser pool from the common
//! options, the engine (policies, judge, runner identity), the practice sites with the
//! bundled tasks registered, and the dashboard. Sets up and tears down; the commands
//! themselves live in `crate::cmd`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use anyhow::{Context, bail};
use browser_pool::PoolConfig;
use engine::Engine;
use engine::RunnerConfig;
use engine::SitesServer;
use policy::{LatencyModel, PolicyRegistry};

use crate::args::{Common, ServerArgs};
use crate::db::{self, Database};

/// The pool the common options describe.
pub fn pool_config(common: &Common) -> anyhow::Result<PoolConfig> {
    if !common.chromium.exists() {
        bail!(
            "Chromium not found at {}: run ./scripts/setup.sh (installs Debian's `chromium`), or point --chromium / SURFGYM_CHROMIUM at one",
            common.chromium.display()
        );
    }
    let mut cfg = PoolConfig::new(&common.chromium);
    common.browser.apply(&mut cfg)?;
    // With remote browsers, `--browsers 0` means remote only.
    cfg.browsers = if cfg.remote.is_empty() {
        common.browsers.max(1)
    } else {
        common.browsers
    };
    cfg.contexts_per_browser = common.contexts.max(1);
    Ok(cfg)
}

/// A pool for `concurrency` sessions: whole browsers of `per_browser` contexts each.
pub fn pool_config_for(
    common: &Common,
    concurrency: usize,
    per_browser: usize,
) -> anyhow::Result<PoolConfig> {
    let mut cfg = pool_config(common)?;
    cfg.contexts_per_browser = per_browser.max(1);
    let needed = concurrency.div_ceil(cfg.contexts_per_browser).max(1);
    cfg.browsers = needed.saturating_sub(cfg.remote.len());
    if cfg.browsers == 0 && cfg.remote.is_empty() {
        cfg.browsers = 1;
    }
    Ok(cfg)
}

/// The database, the practice sites, and an engine with the bundled tasks registered.
pub struct Env {
    pub db: Database,
    pub sites: SitesServer,
    pub engine: Engine,
}

/// The engine every command uses: the pool from the common options, the built-in and
/// simulated policies, this process's runner identity.
pub fn engine(common: &Common, db: &Database) -> anyhow::Result<Engine> {
    engine_with(common, db, Vec::new())
}

/// [`engine`] with more policies registered (a training run's).
pub fn engine_with(
    common: &Common,
    db: &Database,
    extra: Vec<std::sync::Arc<dyn policy::Policy>>,
) -> anyhow::Result<Engine> {
    let model = LatencyModel {
        median: Duration::from_millis(common.sim_latency_ms),
        sigma: common.sim_sigma,
        batch_overhead: Duration::from_millis(20),
    };
    let mut runner = RunnerConfig::for_this_process();
    runner.lease = Duration::from_secs(common.lease_secs.max(1));
    let mut policies = PolicyRegistry::with_simulated(model);
    crate::models::register(common, &mut policies)?;
    for p in extra {
        policies.register(p);
    }
    let engine = Engine::new(db.store.clone(), pool_config(common)?, runner, policies);
    if let Some(judge) = crate::models::model_judge(common, &db.store)? {
        engine.set_model_judge(judge);
    }
    Ok(engine)
}

/// The database, the practice sites with the bundled (and MiniWoB++) tasks registered,
/// and the engine.
pub async fn environment(common: &Common, sites_port: u16) -> anyhow::Result<Env> {
    pool_config(common)?;
    let db = db::open(common).await?;
    let miniwob = engine::find_miniwob(&common.data_dir);
    let extra = miniwob
        .iter()
        .map(|d| ("miniwob".to_string(), d.clone()))
        .collect();
    // 0 asks for free ports, as a listener's port 0 does (not ports 0, 1, 2, ...).
    let first_port = Some(sites_port).filter(|p| *p != 0);
    let sites = SitesServer::start_with(IpAddr::V4(Ipv4Addr::LOCALHOST), first_port, extra)
        .await
        .context("serving the practice sites")?;
    let engine = engine(common, &db)?;
    let report = engine.register_bundled(sites.bases()).await?;
    for e in &report.errors {
        tracing::warn!("bundled task rejected: {e}");
    }
    match (&miniwob, sites.bases().get("miniwob")) {
        (Some(dir), Some(base)) => {
            let r = engine.register_miniwob(dir, base).await?;
            println!("registered {} MiniWoB++ tasks", r.registered);
        }
        _ => println!(
            "MiniWoB++ is not installed (./scripts/setup-python.sh installs it): its suite is not registered"
        ),
    }
    let sites_list: Vec<String> = sites
        .bases()
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    println!("practice sites: {}", sites_list.join(", "));
    println!("registered {} bundled tasks", report.registered);
    Ok(Env { db, sites, engine })
}

/// How long a stopping `serve` or `worker` lets its running episodes finish.
#[derive(clap::Args, Clone, Copy)]
pub struct Grace {
    /// On Ctrl-C or SIGTERM: seconds the running episodes get to finish and be stored; those
    /// still running then go back to the queue (no attempt counted). No new episode starts.
    #[arg(long = "grace-secs", default_value_t = 30)]
    pub secs: u64,
}

/// Stops `engine` cleanly within `grace` and says what went back to the queue.
pub async fn drain(engine: &Engine, grace: Grace) -> anyhow::Result<()> {
    println!(
        "stopping: no new episodes; the running ones get {} s to finish",
        grace.secs
    );
    let d = engine
        .shutdown_gracefully(std::time::Duration::from_secs(grace.secs))
        .await?;
    if d.handed_back > 0 {
        println!(
            "{} unfinished episodes went back to the queue (no attempt counted)",
            d.handed_back
        );
    }
    Ok(())
}

/// Waits for Ctrl-C or SIGTERM (what systemd, Docker and Kubernetes send), so that either
/// way the browsers are closed before the process ends.
pub async fn stopped() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}

/// Serves the API and dashboard for `engine`, on the port asked for or a free one, asking
/// for API tokens as the bind address and `--no-auth` say ([`web::Access`]).
pub async fn start_web(engine: &Engine, server: &ServerArgs) -> anyhow::Result<SocketAddr> {
    let access = server.access()?;
    match access {
        web::Access::Everything => tracing::warn!(
            bind = %server.bind,
            "--bind {}: the API and dashboard are reachable from other machines; every route \
             needs an API token (`surfgym token create --scope read|write|admin`), and the \
             dashboard's sign-in cookie is `Secure`: serve it over HTTPS (a TLS proxy in front)",
            server.bind
        ),
        web::Access::Open => tracing::warn!(
            "--no-auth: the API accepts writes without a token from anything on this machine \
             (cross-site requests from web pages are still refused)"
        ),
        web::Access::Writes => {}
    }
    let listener = match tokio::net::TcpListener::bind((server.bind, server.port)).await {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!(port = server.port, error = %e, "port taken; using a free one");
            tokio::net::TcpListener::bind((server.bind, 0)).await?
        }
    };
    let addr = listener.local_addr()?;
    if access == web::Access::Writes {
        println!(
            "reads are open on loopback; writes need an API token (`surfgym token create --scope \
             write`; the dashboard signs in at {}signin)",
            url(addr)
        );
    }
    let state = web::AppState {
        engine: engine.clone(),
    };
    tokio::spawn(async move {
        if let Err(e) = web::serve_with(listener, state, access).await {
            tracing::error!(error = %e, "web server stopped");
        }
    });
    Ok(addr)
}

/// The dashboard's address as a link.
pub fn url(addr: SocketAddr) -> String {
    format!("http://{addr}/")
}

/// Closes the browsers and the site servers. The private Postgres keeps running: other
/// surfgym processes may share it (`surfgym db stop` stops it).
pub async fn finish(env: Env) -> anyhow::Result<()> {
    env.engine.shutdown().await;
    drop(env.sites);
    if let Some(cluster) = &env.db.cluster {
        println!(
            "the private Postgres keeps running on port {} (`surfgym db stop` stops it)",
            cluster.port()
        );
    }
    Ok(())
}
