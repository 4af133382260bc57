//! Set-up shared by the root package's integration tests, and by `web/tests`, which
//! includes this file: the bundled sites, an engine over the test's database, the web server
//! and its dashboard pages in a real browser, the data directory, and the test database's
//! URL for child processes.
// Each test file uses its own part of this module.
#![allow(dead_code)]

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use browser_pool::{Action, PoolConfig, Session};
use engine::RunnerConfig;
use engine::SitesServer;
use engine::{BundledReport, Engine};
use policy::PolicyRegistry;
use serde_json::{Value, json};
use sqlx::PgPool;
use store::Store;

/// An engine over the test's database, with the default Chromium pool (launched when first
/// used) and a runner named for this process.
pub fn new_engine(pool: PgPool, policies: PolicyRegistry) -> Engine {
    Engine::new(
        Store::from_pool(pool),
        PoolConfig::new(PoolConfig::default_chromium()),
        RunnerConfig::for_this_process(),
        policies,
    )
}

/// The bundled practice sites on loopback, each on a free port.
pub async fn sites() -> SitesServer {
    SitesServer::start(IpAddr::V4(Ipv4Addr::LOCALHOST), None)
        .await
        .unwrap()
}

/// MiniWoB++'s pages served on loopback (a free port), and where its HTML is
/// (`scripts/setup-python.sh` installs it).
pub async fn miniwob_sites() -> (SitesServer, PathBuf) {
    let dir = engine::find_miniwob(&data_dir()).expect("MiniWoB++: run ./scripts/setup-python.sh");
    let sites = SitesServer::start_with(
        IpAddr::V4(Ipv4Addr::LOCALHOST),
        None,
        vec![("miniwob".into(), dir.clone())],
    )
    .await
    .unwrap();
    (sites, dir)
}

/// The bundled sites, an engine with `policies`, and the bundled tasks registered against
/// where the sites are served (the report says what did not validate).
pub async fn engine_with_sites(
    pool: PgPool,
    policies: PolicyRegistry,
) -> (Engine, SitesServer, BundledReport) {
    let sites = sites().await;
    let engine = new_engine(pool, policies);
    let report = engine.register_bundled(sites.bases()).await.unwrap();
    (engine, sites, report)
}

/// The web server (API and dashboard) over `engine`, on a free loopback port.
pub async fn serve_web(engine: &Engine) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let state = web::AppState {
        engine: engine.clone(),
    };
    tokio::spawn(async move { web::serve(listener, state).await });
    addr
}

/// Evaluates `expr` on the session's page; a script error fails the test.
pub async fn js(s: &Session, expr: &str) -> Value {
    s.evaluate(expr)
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("{expr}: {e}"))
}

/// Opens a dashboard page and waits until it has rendered its data.
pub async fn open_dashboard(s: &mut Session, url: &str) {
    let r = s.act(&Action::Goto(url.to_string())).await.unwrap();
    assert_eq!(r.error, None);
    let deadline = Instant::now() + Duration::from_secs(60);
    while js(s, "!!document.body && document.body.dataset.ready === '1'").await != json!(true) {
        assert!(Instant::now() < deadline, "{url} never became ready");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `group_size` for GRPO runs of the untrained tiny model: groups across seeds. It samples
/// almost the same answer to one task instance, so instance groups (the default) would all
/// end alike and teach nothing; grouping is not what those tests test.
pub const TINY_GROUP: u32 = 1;

/// Where `scripts/setup-python.sh` put ONNX Runtime, the generated models and MiniWoB++
/// (`$SURFGYM_DATA_DIR`, else the package's `.surfgym`).
pub fn data_dir() -> PathBuf {
    PathBuf::from(
        std::env::var("SURFGYM_DATA_DIR")
            .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/.surfgym").into()),
    )
}

/// The stored detail of a campaign's first listed episode.
pub async fn first_episode(engine: &Engine, campaign: uuid::Uuid) -> store::EpisodeDetail {
    let (eps, _) = engine
        .store()
        .list_episodes(&store::EpisodeFilter::campaign(campaign), 10, 0)
        .await
        .unwrap();
    engine
        .store()
        .get_episode(eps[0].id)
        .await
        .unwrap()
        .unwrap()
}

/// The data directory's venv Python (setup-python.sh made it), else the system's: what
/// test trainers (`tests/external/`) run on.
pub fn python() -> String {
    let venv = data_dir().join("venv/bin/python");
    if venv.is_file() {
        venv.display().to_string()
    } else {
        "python3".into()
    }
}

/// The URL of the test's own database (`#[sqlx::test]` makes one per test), for the
/// `surfgym` processes a test starts.
pub fn database_url(pool: &PgPool) -> String {
    let base = std::env::var("DATABASE_URL").expect("DATABASE_URL is set by scripts/test.sh");
    let db = pool
        .connect_options()
        .get_database()
        .expect("a database name")
        .to_string();
    let (server, query) = match base.split_once('?') {
        Some((s, q)) => (s.to_string(), format!("?{q}")),
        None => (base.clone(), String::new()),
    };
    let server = match server.rfind('/') {
        Some(i) if server[..i].ends_with('/') => server,
        Some(i) => server[..i].to_string(),
        None => server,
    };
    format!("{server}/{db}{query}")
}

/// ONNX Runtime's library, as `scripts/setup-python.sh` installs it.
pub fn ort_dylib() -> std::path::PathBuf {
    inference::find_ort_dylib(&data_dir()).expect("ONNX Runtime: run ./scripts/setup-python.sh")
}

/// A training run ready to execute (see [`training_run`]).
pub struct TrainingRun {
    /// Knows the built-in policies and the run's own, nothing else.
    pub engine: Engine,
    /// The run's sampling and greedy policies.
    pub policies: trainloop::run::RunPolicies,
    /// The stored run.
    pub id: uuid::Uuid,
    /// Its config.
    pub cfg: trainloop::RunConfig,
    /// MiniWoB++'s pages: keep them alive while the run executes.
    pub sites: SitesServer,
}

impl TrainingRun {
    /// Executes the run to its end (no progress events) and checks that it completed.
    pub async fn execute_to_end(&self, root: &std::path::Path) -> store::RunView {
        let done = trainloop::run::execute(
            &self.engine,
            &self.policies,
            self.id,
            root,
            &ort_dylib(),
            &|_| {},
        )
        .await
        .unwrap();
        assert_eq!(done.state, store::Status::Completed, "{:?}", done.error);
        done
    }
}

/// A training run of `config` created in the test's database with MiniWoB++ registered,
/// its versions under `root`. Its engine knows only the built-in policies and the run's
/// own, so nothing that knows the solutions can feed the training data.
pub async fn training_run(pool: &PgPool, config: &Value, root: &std::path::Path) -> TrainingRun {
    let (sites, dir) = miniwob_sites().await;
    let setup = new_engine(pool.clone(), PolicyRegistry::builtin());
    setup
        .register_miniwob(&dir, &sites.bases()["miniwob"])
        .await
        .unwrap();
    let store = setup.store().clone();
    let cfg = trainloop::RunConfig::parse(&config.to_string()).unwrap();
    let id = trainloop::run::create(&store, &cfg).await.unwrap();
    let view = store.get_run(id).await.unwrap().unwrap();
    let policies = trainloop::run::prepare(&cfg, &view, root, &ort_dylib()).unwrap();
    let mut registry = PolicyRegistry::builtin();
    for p in policies.all() {
        registry.register(p);
    }
    TrainingRun {
        engine: new_engine(pool.clone(), registry),
        policies,
        id,
        cfg,
        sites,
    }
}
