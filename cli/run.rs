//! The commands that run things: demo, serve, run, tasks verify, tasks import.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use browser_pool::PoolConfig;
use clap::Args;
use engine::policy::{LatencyModel, PolicyRegistry};
use engine::runner::RunnerConfig;
use engine::sites::SitesServer;
use engine::store::TaskFilter;
use engine::{CampaignSpec, Engine};
use uuid::Uuid;

use crate::db::{self, Database};
use crate::{Common, progress, summary};

/// Where to serve.
#[derive(Args, Clone)]
pub struct ServerArgs {
    /// Address of the API and dashboard (loopback unless you mean it).
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub bind: IpAddr,
    /// Port of the API and dashboard (a free one is used when it is taken).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// First port of the practice sites, one port per site (0: any free ports).
    #[arg(long, default_value_t = 8701)]
    pub sites_port: u16,
}

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
    #[command(flatten)]
    pub server: ServerArgs,
}

/// `surfgym serve`.
#[derive(Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub server: ServerArgs,
}

/// Which tasks a campaign runs.
#[derive(Args, Clone, Default)]
pub struct TaskArgs {
    /// Only tasks of this website.
    #[arg(long)]
    pub site: Option<String>,
    /// Only tasks with this tag.
    #[arg(long)]
    pub tag: Option<String>,
    /// Only tasks of this difficulty (easy, medium, hard).
    #[arg(long)]
    pub difficulty: Option<String>,
    /// Only tasks of this split (train, test).
    #[arg(long)]
    pub split: Option<String>,
    /// Only these task ids.
    #[arg(long = "task", value_name = "ID")]
    pub ids: Vec<String>,
}

impl TaskArgs {
    fn filter(&self) -> TaskFilter {
        TaskFilter {
            site: self.site.clone(),
            tag: self.tag.clone(),
            difficulty: self.difficulty.clone(),
            split: self.split.clone(),
            ids: self.ids.clone(),
        }
    }
}

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
    /// Step limit per episode, capping each task's own (default: each task's own).
    #[arg(long)]
    pub max_steps: Option<u32>,
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

/// `surfgym worker`.
#[derive(Args)]
pub struct WorkerArgs {
    /// Also serve the bundled practice sites (on --sites-port and up) and register the
    /// bundled tasks with those URLs; without it, tasks must be reachable as registered.
    #[arg(long)]
    pub serve_sites: bool,
    /// First port of the practice sites, with --serve-sites (0: any free ports).
    #[arg(long, default_value_t = 8701)]
    pub sites_port: u16,
    /// Serve this worker's Prometheus metrics at http://ADDR/metrics (e.g. 0.0.0.0:9100;
    /// port 0 picks a free one, printed at start).
    #[arg(long)]
    pub metrics_addr: Option<std::net::SocketAddr>,
}

/// `surfgym campaign ...`.
#[derive(clap::Subcommand)]
pub enum CampaignCommand {
    /// List campaigns, newest first.
    List,
    /// Show one campaign's counts and outcome table.
    Show {
        /// Campaign id.
        id: Uuid,
    },
    /// Stop starting episodes (running ones finish).
    Pause {
        /// Campaign id.
        id: Uuid,
    },
    /// Queue a paused campaign again.
    Resume {
        /// Campaign id.
        id: Uuid,
    },
    /// Cancel: unfinished episodes are not run.
    Cancel {
        /// Campaign id.
        id: Uuid,
    },
    /// Run (or resume) an existing campaign here, with a progress bar.
    Run {
        /// Campaign id.
        id: Uuid,
        /// First port of the practice sites (0: any free ports).
        #[arg(long, default_value_t = 8701)]
        sites_port: u16,
    },
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
    /// The file: JSON Lines, one task per line (a JSON array for WebArena, task names for
    /// MiniWoB++).
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
}

fn pool_config(common: &Common) -> anyhow::Result<PoolConfig> {
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

/// The environment other command modules run in.
pub async fn environment_for(common: &Common, sites_port: u16) -> anyhow::Result<Env> {
    environment(common, sites_port).await
}

/// Closes what [`environment_for`] opened.
pub async fn finish_env(env: Env) -> anyhow::Result<()> {
    finish(env).await
}

/// The engine every command uses: the pool from the common options, the built-in and
/// simulated policies, this process's runner identity.
fn engine(common: &Common, db: &Database) -> anyhow::Result<Engine> {
    let model = LatencyModel {
        median: Duration::from_millis(common.sim_latency_ms),
        sigma: common.sim_sigma,
        batch_overhead: Duration::from_millis(20),
    };
    let mut runner = RunnerConfig::for_this_process();
    runner.lease = Duration::from_secs(common.lease_secs.max(1));
    let mut policies = PolicyRegistry::with_simulated(model);
    crate::models::register(common, &mut policies)?;
    let engine = Engine::new(db.store.clone(), pool_config(common)?, runner, policies);
    if let Some(judge) = crate::models::model_judge(common, &db.store)? {
        engine.set_model_judge(judge);
    }
    Ok(engine)
}

async fn environment(common: &Common, sites_port: u16) -> anyhow::Result<Env> {
    pool_config(common)?;
    let db = db::open(common).await?;
    let miniwob = engine::sites::find_miniwob(&common.data_dir);
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

async fn start_web(engine: &Engine, server: &ServerArgs) -> anyhow::Result<SocketAddr> {
    let listener = match tokio::net::TcpListener::bind((server.bind, server.port)).await {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!(port = server.port, error = %e, "port taken; using a free one");
            tokio::net::TcpListener::bind((server.bind, 0)).await?
        }
    };
    let addr = listener.local_addr()?;
    let state = web::AppState {
        engine: engine.clone(),
    };
    tokio::spawn(async move {
        if let Err(e) = web::serve(listener, state).await {
            tracing::error!(error = %e, "web server stopped");
        }
    });
    Ok(addr)
}

fn url(addr: SocketAddr) -> String {
    format!("http://{addr}/")
}

/// Closes the browsers and the site servers. The private Postgres keeps running: other
/// surfgym processes may share it (`surfgym db stop` stops it).
async fn finish(env: Env) -> anyhow::Result<()> {
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

/// `surfgym demo`.
pub async fn demo(common: &Common, args: DemoArgs) -> anyhow::Result<ExitCode> {
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
    println!(
        "dashboard: {}  (episode replays under each campaign)",
        url(addr)
    );
    if args.exit_when_done {
        finish(env).await?;
        return Ok(ExitCode::SUCCESS);
    }
    println!("serving until Ctrl-C");
    tokio::signal::ctrl_c().await?;
    finish(env).await?;
    Ok(ExitCode::SUCCESS)
}

/// `surfgym serve`.
pub async fn serve(common: &Common, args: ServeArgs) -> anyhow::Result<ExitCode> {
    let env = environment(common, args.server.sites_port).await?;
    let addr = start_web(&env.engine, &args.server).await?;
    env.engine.start_scheduler().await;
    println!(
        "dashboard and API: {}  (OpenAPI: {}api/openapi.json); Ctrl-C to stop",
        url(addr),
        url(addr)
    );
    tokio::signal::ctrl_c().await?;
    finish(env).await?;
    Ok(ExitCode::SUCCESS)
}

async fn run_here(env: &Env, spec: CampaignSpec) -> anyhow::Result<Uuid> {
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
    let env = environment(common, args.sites_port).await?;
    let spec = CampaignSpec {
        name: args.name,
        tasks: Some(args.tasks.filter()),
        policy: Some(args.policy),
        rollouts_per_task: Some(args.rollouts),
        max_steps: args.max_steps,
        seed: Some(args.seed),
        ..Default::default()
    };
    let id = run_here(&env, spec).await?;
    println!("campaign {id}");
    finish(env).await?;
    Ok(ExitCode::SUCCESS)
}

/// `surfgym tasks verify`: every reference solution must succeed.
pub async fn verify(common: &Common, args: VerifyArgs) -> anyhow::Result<ExitCode> {
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
pub async fn import(common: &Common, args: ImportArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("reading {}", args.file.display()))?;
    let format = tasks::formats::Format::parse(&args.format).with_context(|| {
        format!(
            "unknown format `{}` ({})",
            args.format,
            tasks::formats::Format::NAMES
        )
    })?;
    let mut bases = std::collections::BTreeMap::new();
    for b in &args.bases {
        let (k, v) = b
            .split_once('=')
            .with_context(|| format!("--base {b}: use KEY=URL"))?;
        bases.insert(k.to_string(), v.to_string());
    }
    let answers: std::collections::BTreeMap<String, String> = match &args.answers {
        Some(p) => serde_json::from_str(&std::fs::read_to_string(p)?)
            .with_context(|| format!("{}: a JSON object of id → answer", p.display()))?,
        None => Default::default(),
    };
    let db = db::open(common).await?;
    let (mut ok, mut bad) = (0, 0);
    for line in tasks::formats::import(format, &text, &bases, &answers) {
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
            Ok(()) => ok += 1,
            Err(e) => {
                bad += 1;
                eprintln!("{}:{}: {e}", args.file.display(), line.line);
            }
        }
    }
    println!("imported {ok} task(s), {bad} line(s) rejected");
    Ok(if bad == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Waits for Ctrl-C or SIGTERM.
async fn stopped() {
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

/// `surfgym worker`.
pub async fn worker(common: &Common, args: WorkerArgs) -> anyhow::Result<ExitCode> {
    let (engine, _sites) = if args.serve_sites {
        let env = environment(common, args.sites_port).await?;
        (env.engine, Some(env.sites))
    } else {
        pool_config(common)?;
        let db = db::open(common).await?;
        (engine(common, &db)?, None)
    };
    if let Some(addr) = args.metrics_addr {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("--metrics-addr {addr}: cannot listen there"))?;
        println!("metrics at http://{}/metrics", listener.local_addr()?);
        let app = web::metrics_router(web::AppState {
            engine: engine.clone(),
        });
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "metrics server stopped");
            }
        });
    }
    engine.start_scheduler().await;
    println!(
        "worker running; Ctrl-C or SIGTERM stops it (its unfinished episodes go back to the queue)"
    );
    stopped().await;
    // Closing the browsers fails the in-flight episodes, which puts them back as pending.
    engine.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

/// `surfgym campaign ...`.
pub async fn campaign(common: &Common, cmd: CampaignCommand) -> anyhow::Result<ExitCode> {
    if let CampaignCommand::Run { id, sites_port } = cmd {
        let env = environment(common, sites_port).await?;
        let engine = env.engine.clone();
        let runner = tokio::spawn(async move { engine.run_campaign(id).await });
        progress::watch(&env.db.store, &[id]).await?;
        runner.await.context("campaign task panicked")??;
        summary::print(&env.db.store, &[id]).await?;
        finish(env).await?;
        return Ok(ExitCode::SUCCESS);
    }
    let db = db::open(common).await?;
    let engine = engine(common, &db)?;
    let store = &db.store;
    match cmd {
        CampaignCommand::List => {
            let (list, total) = store.list_campaigns(100, 0).await?;
            println!(
                "{:<36}  {:<10} {:<13} {:>9} {:>8}  name",
                "id", "status", "policy", "done", "success"
            );
            for c in list {
                let rate = c
                    .success_rate
                    .map_or("-".to_string(), |r| format!("{:.0}%", r * 100.0));
                let done = format!(
                    "{}/{}",
                    c.counts.finished + c.counts.failed,
                    c.total_episodes
                );
                println!(
                    "{}  {:<10} {:<13} {:>9} {:>8}  {}",
                    c.id, c.status, c.policy, done, rate, c.name
                );
            }
            println!("{total} campaign(s)");
        }
        CampaignCommand::Show { id } => {
            let c = store
                .get_campaign(id)
                .await?
                .ok_or_else(|| anyhow::anyhow!("no campaign {id}"))?;
            println!("{}", serde_json::to_string_pretty(&c)?);
            summary::print(store, &[id]).await?;
        }
        CampaignCommand::Pause { id } => {
            engine.pause_campaign(id).await?;
            println!("paused {id}: running episodes finish, no new ones start");
        }
        CampaignCommand::Resume { id } => {
            engine.resume_campaign(id).await?;
            println!(
                "queued {id} again: a running `surfgym serve` or `surfgym worker` picks it up"
            );
        }
        CampaignCommand::Cancel { id } => {
            engine.cancel_campaign(id).await?;
            println!("cancelled {id}");
        }
        CampaignCommand::Run { .. } => unreachable!("handled above"),
    }
    Ok(ExitCode::SUCCESS)
}
