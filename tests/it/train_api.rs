//! Training runs over the REST API and on the dashboard, through the real web server (a
//! socket), real Postgres, real Chromium and the tiny-text model: validation that names
//! the bad field, the run's life (create, list, show, pause, resume, cancel, 409s), the
//! lease by which servers execute API-created runs, the live events and `/metrics`, pause,
//! cancel and takeover by another server. A run's page: `train_page.rs`.

use crate::common;

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use browser_pool::Action;
use policy::PolicyRegistry;
use serde_json::{Value, json};
use sqlx::PgPool;
use store::{EpisodeStatus, Store};

use common::{js, serve_web};

pub(crate) fn tiny_text() -> PathBuf {
    common::data_dir().join("models/tiny-text")
}

pub(crate) fn dylib() -> PathBuf {
    inference::find_ort_dylib(&common::data_dir())
        .expect("ONNX Runtime: run ./scripts/setup-python.sh")
}

pub(crate) fn artifact(name: &str) -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Saves a screenshot as a PNG artifact (for reviewers and CI uploads).
pub(crate) fn save_png(bytes: &[u8], name: &str) {
    image::load_from_memory(bytes)
        .unwrap()
        .save(artifact(name))
        .unwrap();
}

/// A run of the bundled tasks held out by seed.
fn config() -> Value {
    json!({
        "name": "api run", "model": tiny_text(), "train": {"tag": "bundled"},
        "held_out": "seeds", "iterations": 1, "rollouts_per_task": 2,
        "group_size": common::TINY_GROUP,
        "curriculum": {"kind": "fixed", "horizon": 2}, "eval_horizon": 2
    })
}

pub(crate) async fn call(
    http: &reqwest::Client,
    method: &str,
    url: &str,
    body: Option<&Value>,
) -> (u16, Value) {
    let mut r = http.request(method.parse().unwrap(), url);
    if method != "GET" {
        r = r.header("content-type", "application/json");
        r = r.body(body.map_or(String::new(), Value::to_string));
    }
    let resp = r.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

fn fields(body: &Value) -> Vec<String> {
    body["error"]["fields"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|f| f["field"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn training_runs_are_validated_queued_controlled_and_leased(pool: PgPool) {
    let (engine, _sites, report) = common::engine_with_sites(pool, PolicyRegistry::builtin()).await;
    assert!(report.registered > 0);
    let addr = serve_web(&engine).await;
    let base = format!("http://{addr}/api/training-runs");
    let http = reqwest::Client::new();

    let tmp = tempfile::tempdir().unwrap();
    let untrainable = tmp.path().join("not-a-model");
    std::fs::create_dir_all(untrainable.join("onnx")).unwrap();
    std::fs::write(untrainable.join("onnx/decoder_model_merged.onnx"), b"junk").unwrap();
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "train",
            json!({"tag": "bundled", "split": "dev"}),
            "train.split",
        ),
        (
            "held_out",
            json!({"tasks": {"split": "dev"}}),
            "held_out.tasks.split",
        ),
        (
            "curriculum",
            json!({"kind": "fixed", "horizon": 0}),
            "curriculum.horizon",
        ),
        ("eval_horizon", json!(0), "eval_horizon"),
        ("eval_horizon", json!(-3), "eval_horizon"),
        ("train", json!({}), "train"),
        ("train", json!({"ids": ["no-such-task"]}), "train"),
        ("objective", json!("ppo"), "objective"),
        ("demonstrator", json!("oracle"), "demonstrator"),
        ("demonstrator", json!("scripted"), "demonstrator"),
        (
            "held_out",
            json!({"tasks": {"site": "nowhere"}}),
            "held_out.tasks",
        ),
        ("model", json!(untrainable), "model"),
        ("sneaky", json!(1), "sneaky"),
        (
            "overlap",
            json!({"max_staleness": 0}),
            "overlap.max_staleness",
        ),
        (
            "overlap",
            json!({"max_staleness": -1}),
            "overlap.max_staleness",
        ),
        // CI's build has no trainer CUDA backend: the 400 says so, before any campaign.
        ("devices", json!({"train": "cuda"}), "devices.train"),
        (
            "devices",
            json!({"policy_threads": 0}),
            "devices.policy_threads",
        ),
    ];
    for (key, value, want) in cases {
        let mut c = config();
        c[key] = value.clone();
        let (status, body) = call(&http, "POST", &base, Some(&c)).await;
        assert_eq!(status, 400, "{key}={value}: {body}");
        assert_eq!(
            fields(&body),
            vec![want.to_string()],
            "{key}={value}: {body}"
        );
    }
    let mut c = config();
    c.as_object_mut().unwrap().remove("name");
    let (status, body) = call(&http, "POST", &base, Some(&c)).await;
    assert_eq!(
        (status, fields(&body)),
        (400, vec!["name".to_string()]),
        "{body}"
    );
    let (_, listed) = call(&http, "GET", &base, None).await;
    assert_eq!(listed["total"], json!(0), "nothing refused was stored");

    // Create → list → show.
    let (status, created) = call(&http, "POST", &base, Some(&config())).await;
    assert_eq!(status, 202, "{created}");
    let id = created["id"].as_str().unwrap().to_string();
    assert_eq!(created["state"], json!("queued"));
    let (_, listed) = call(&http, "GET", &format!("{base}?limit=10"), None).await;
    assert_eq!(listed["total"], json!(1));
    assert_eq!(listed["items"][0]["id"], json!(id));
    let (status, shown) = call(&http, "GET", &format!("{base}/{id}"), None).await;
    assert_eq!(status, 200);
    assert_eq!(shown["state"], json!("queued"));
    assert_eq!(shown["config"]["eval_horizon"], json!(2));
    assert_eq!(shown["iterations"], json!([]));
    assert_eq!(shown["curve"], json!([]));
    let (status, _) = call(&http, "GET", &format!("{base}?limit=0"), None).await;
    assert_eq!(status, 400);
    let (status, body) = call(&http, "GET", &format!("{base}/not-a-uuid"), None).await;
    assert_eq!((status, fields(&body)), (400, vec!["id".to_string()]));
    let (status, _) = call(
        &http,
        "GET",
        &format!("{base}/{}", uuid::Uuid::new_v4()),
        None,
    )
    .await;
    assert_eq!(status, 404);

    // The live stream's first event is the run as `GET` shows it.
    let mut events = http
        .get(format!("{base}/{id}/events"))
        .send()
        .await
        .unwrap();
    assert_eq!(events.status().as_u16(), 200);
    let chunk = tokio::time::timeout(Duration::from_secs(10), events.chunk())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&chunk);
    assert!(text.starts_with("event: run\ndata: {"), "{text}");
    assert!(text.contains(&format!("\"id\":\"{id}\"")) && text.contains("\"state\":\"queued\""));
    drop(events);

    // Pause → resume → cancel, with 409s from states a change does not apply to.
    let act = |verb: &str| format!("{base}/{id}/{verb}");
    // Paused from its page: the button posts, the page shows the new state.
    let s = open_run_page(&engine, addr, &id).await;
    assert_eq!(
        js(&s, "document.getElementById('run-state').textContent").await,
        json!("queued")
    );
    js(
        &s,
        "document.querySelector('button[data-action=\"pause\"]').click(), true",
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while js(&s, "document.getElementById('run-state').textContent").await != json!("paused") {
        assert!(
            Instant::now() < deadline,
            "the page never showed the run paused"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        js(&s, "[...document.querySelectorAll('button[data-action]')].map(b => b.dataset.action).join()").await,
        json!("resume,cancel")
    );
    let (_, body) = call(&http, "GET", &format!("{base}/{id}"), None).await;
    assert_eq!(body["state"], json!("paused"));
    drop(s);
    let (status, body) = call(&http, "POST", &act("pause"), None).await;
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("paused")
    );
    let (status, body) = call(&http, "POST", &act("resume"), None).await;
    assert_eq!((status, body["state"].clone()), (200, json!("queued")));
    let (status, body) = call(&http, "POST", &act("cancel"), None).await;
    assert_eq!((status, body["state"].clone()), (200, json!("cancelled")));
    for verb in ["pause", "resume", "cancel"] {
        let (status, _) = call(&http, "POST", &act(verb), None).await;
        assert_eq!(status, 409, "{verb} of a cancelled run");
    }

    // Prometheus sees it.
    let metrics = http
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("surfgym_training_runs{state=\"cancelled\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("surfgym_training_runs{state=\"queued\"} 0"));
    assert!(metrics.contains(&format!(
        "surfgym_training_iterations_completed{{run=\"{id}\",name=\"api run\"}} 0"
    )));

    // The dashboard's index links the training runs' list, which links the run.
    let page = |path: String| {
        let http = http.clone();
        async move { http.get(path).send().await.unwrap().text().await.unwrap() }
    };
    assert!(
        page(format!("http://{addr}/"))
            .await
            .contains("href=\"/training-runs\"")
    );
    let list = page(format!("http://{addr}/training-runs")).await;
    assert!(
        list.contains(&format!("href=\"/training-runs/{id}\">api run</a>")),
        "{list}"
    );

    // Leases: one server at a time; a lapsed lease (its server died) is taken over.
    let store = engine.store();
    let (_, second) = call(&http, "POST", &base, Some(&config())).await;
    let second: uuid::Uuid = second["id"].as_str().unwrap().parse().unwrap();
    let lease = Duration::from_secs(1);
    assert_eq!(
        store.claim_run("server-a", lease).await.unwrap(),
        Some(second)
    );
    assert_eq!(
        store.claim_run("server-b", lease).await.unwrap(),
        None,
        "held by a"
    );
    assert!(
        store
            .renew_run_lease(second, "server-a", lease)
            .await
            .unwrap()
    );
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert_eq!(
        store.claim_run("server-b", lease).await.unwrap(),
        Some(second),
        "a died"
    );
    assert!(
        !store
            .renew_run_lease(second, "server-a", lease)
            .await
            .unwrap(),
        "a lost it"
    );
    // A run started by `surfgym train run` is its process's, never claimed.
    let cli_run = uuid::Uuid::new_v4();
    store.create_run(cli_run, "cli", &config()).await.unwrap();
    // `surfgym train resume` takes a run over only from no live server.
    assert!(!store.take_run(second).await.unwrap(), "server-b holds it");
    store.release_run(second, "server-b").await.unwrap();
    assert!(store.take_run(second).await.unwrap());
    assert_eq!(
        store.claim_run("server-c", lease).await.unwrap(),
        None,
        "neither the CLI's runs nor one it took over are claimed"
    );
}

pub(crate) async fn wait_for_state(
    store: &Store,
    id: uuid::Uuid,
    limit: Duration,
) -> store::Status {
    let deadline = Instant::now() + limit;
    loop {
        let state = store.get_run(id).await.unwrap().unwrap().state;
        if state.is_ended() || Instant::now() > deadline {
            return state;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn lease_owner(pool: &PgPool, id: uuid::Uuid) -> Option<String> {
    sqlx::query_scalar("SELECT lease_owner FROM training_runs WHERE id = $1")
        .bind(id)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Polls `GET /api/training-runs/{id}` until `done` holds of it.
async fn wait_for(
    http: &reqwest::Client,
    url: &str,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let (_, run) = call(http, "GET", url, None).await;
        if done(&run) {
            return run;
        }
        assert!(Instant::now() < deadline, "never {what}: {run}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A web server on an engine with MiniWoB++ registered, and the executor that runs its
/// training runs: what the run tests drive over HTTP. The sites and the run directory
/// live as long as the caller keeps them.
pub(crate) struct ExecutingServer {
    pub engine: engine::Engine,
    pub executor: tokio::task::JoinHandle<()>,
    pub addr: std::net::SocketAddr,
    pub sites: engine::SitesServer,
    pub root: tempfile::TempDir,
}

/// A run's page in a browser session leased from the engine's pool, opened without error.
pub(crate) async fn open_run_page(
    engine: &engine::Engine,
    addr: std::net::SocketAddr,
    id: impl std::fmt::Display,
) -> browser_pool::Session {
    let mut s = engine.pool().await.unwrap().lease().await.unwrap();
    let r = s
        .act(&Action::Goto(format!("http://{addr}/training-runs/{id}")))
        .await
        .unwrap();
    assert_eq!(r.error, None);
    s
}

pub(crate) async fn executing_server(pool: PgPool) -> ExecutingServer {
    let (sites, dir) = common::miniwob_sites().await;
    let engine = common::new_engine(pool, PolicyRegistry::builtin());
    engine
        .register_miniwob(&dir, &sites.bases()["miniwob"])
        .await
        .unwrap();
    let root = tempfile::tempdir().unwrap();
    let executor = trainloop::executor::Executor {
        engine: engine.clone(),
        root: root.path().to_path_buf(),
        owner: "test-server".into(),
        lease: Duration::from_secs(30),
        dylib: Arc::new(|_| Ok(dylib())),
    }
    .spawn();
    let addr = serve_web(&engine).await;
    ExecutingServer {
        engine,
        executor,
        addr,
        sites,
        root,
    }
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn the_executor_stops_a_paused_run_between_phases_and_a_cancelled_one_with_its_campaigns(
    pool: PgPool,
) {
    let ExecutingServer {
        engine: _,
        executor,
        addr,
        sites: _sites,
        root: _root,
    } = executing_server(pool.clone()).await;
    let http = reqwest::Client::new();
    let cfg = json!({
        "name": "stop and go", "model": tiny_text(),
        "train": {"ids": ["miniwob.click-test", "miniwob.click-test-2"]},
        "held_out": "seeds", "iterations": 3, "rollouts_per_task": 4,
        "curriculum": {"kind": "fixed", "horizon": 3}, "eval_horizon": 2, "eval_rollouts": 2,
        "objective": "fbc", "policy": {"max_new_tokens": 16}
    });
    let base = format!("http://{addr}/api/training-runs");
    let (_, created) = call(&http, "POST", &base, Some(&cfg)).await;
    let id: uuid::Uuid = created["id"].as_str().unwrap().parse().unwrap();
    let url = format!("{base}/{id}");

    // Paused while it works: the phase in progress ends, nothing after it starts.
    wait_for(&http, &url, "started", |r| r["state"] == json!("running")).await;
    let (status, _) = call(&http, "POST", &format!("{url}/pause"), None).await;
    assert_eq!(status, 200);
    let deadline = Instant::now() + Duration::from_secs(120);
    while lease_owner(&pool, id).await.is_some() {
        assert!(
            Instant::now() < deadline,
            "the executor never let the paused run go"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (_, paused) = call(&http, "GET", &url, None).await;
    assert_eq!(paused["state"], json!("paused"), "{paused}");
    assert_eq!(
        paused["active_campaigns"],
        json!([]),
        "no campaign left running"
    );
    let before = paused["iterations"].as_array().unwrap().len();
    assert!(before <= 1, "stopped in iteration 0: {paused}");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (_, still) = call(&http, "GET", &url, None).await;
    assert_eq!(
        still["iterations"], paused["iterations"],
        "nothing moved while paused"
    );

    // Resumed: the executor takes it up again; cancelled mid-rollout, its campaigns end too
    // and the run ends cancelled, not failed.
    let (status, _) = call(&http, "POST", &format!("{url}/resume"), None).await;
    assert_eq!(status, 200);
    let working = wait_for(&http, &url, "rolling out in iteration 1", |r| {
        r["active_campaigns"].as_array().is_some_and(|a| {
            a.iter()
                .any(|c| c["name"].as_str().unwrap_or("").contains("iteration 1"))
        })
    })
    .await;
    let (status, cancelled) = call(&http, "POST", &format!("{url}/cancel"), None).await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["state"], json!("cancelled"));
    let deadline = Instant::now() + Duration::from_secs(120);
    while lease_owner(&pool, id).await.is_some() {
        assert!(
            Instant::now() < deadline,
            "the executor never let the cancelled run go"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (_, end) = call(&http, "GET", &url, None).await;
    assert_eq!(end["state"], json!("cancelled"), "{end}");
    for c in working["active_campaigns"].as_array().unwrap() {
        let (_, c) = call(
            &http,
            "GET",
            &format!("http://{addr}/api/campaigns/{}", c["id"].as_str().unwrap()),
            None,
        )
        .await;
        assert_eq!(c["status"], json!("cancelled"), "{c}");
    }
    executor.abort();
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_server_killed_mid_run_is_taken_over_by_the_next_which_resumes_the_run(pool: PgPool) {
    let serve = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_surfgym"))
            .args([
                "serve",
                "--port",
                "0",
                "--sites-port",
                "0",
                "--lease-secs",
                "3",
            ])
            .env("DATABASE_URL", common::database_url(&pool))
            .env("SURFGYM_DATA_DIR", common::data_dir())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            // Its own process group, so that killing the server kills its browsers too, as
            // a dead machine's would go (a lone SIGKILL leaves them orphaned).
            .process_group(0)
            .spawn()
            .unwrap()
    };
    let mut first = serve();
    // The server registers MiniWoB++'s tasks; the run waits for them.
    let store = Store::from_pool(pool.clone());
    let deadline = Instant::now() + Duration::from_secs(120);
    while store
        .load_tasks(&store::TaskFilter {
            ids: vec!["miniwob.click-test".into()],
            ..Default::default()
        })
        .await
        .unwrap()
        .is_empty()
    {
        assert!(
            Instant::now() < deadline,
            "the server never registered MiniWoB++"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let cfg: trainloop::RunConfig = serde_json::from_value(json!({
        "name": "takeover", "model": tiny_text(),
        "train": {"ids": ["miniwob.click-test", "miniwob.click-test-2"]},
        "held_out": "seeds", "iterations": 1, "rollouts_per_task": 4,
        "curriculum": {"kind": "fixed", "horizon": 3}, "eval_horizon": 2, "eval_rollouts": 2,
        // The solver demonstrates iteration 1: its update has successes to clone whatever
        // the untrained model would have done, so a version is published.
        "objective": "fbc", "fbc_iterations": 1, "demonstrator": "miniwob-solver",
        "policy": {"max_new_tokens": 16}
    }))
    .unwrap();
    let id = trainloop::executor::submit(&store, &cfg).await.unwrap();
    // Killed once iteration 1's rollouts are under way.
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        assert!(Instant::now() < deadline, "iteration 1 never started");
        let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM training_iterations i JOIN episodes e ON e.campaign_id = ANY(i.rollout_campaigns)
             WHERE i.run_id = $1 AND i.idx = 1 AND e.status = ANY($2)",
        )
        .bind(id)
        .bind(&[EpisodeStatus::Running, EpisodeStatus::Finished][..])
        .fetch_one(&pool)
        .await
        .unwrap();
        if n > 0 {
            break;
        }
        assert!(first.try_wait().unwrap().is_none(), "the server stopped");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let pgid = i32::try_from(first.id()).unwrap();
    assert!(pgid > 1);
    // SAFETY: kill(2) with a negative pid other than -1 signals exactly the process group
    // the first server leads.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    first.wait().unwrap();
    let held_by = lease_owner(&pool, id).await;
    assert!(held_by.is_some(), "the killed server held the run");

    let mut second = serve();
    let state = wait_for_state(&store, id, Duration::from_secs(300)).await;
    unsafe { libc::kill(second.id() as i32, libc::SIGTERM) };
    second.wait().unwrap();
    let view = store.get_run(id).await.unwrap().unwrap();
    assert_eq!(state, store::Status::Completed, "{view:?}");
    let its = store.run_iterations(id).await.unwrap();
    assert_eq!(its.iter().map(|i| i.idx).collect::<Vec<_>>(), [0, 1]);
    // Every planned episode ran once, whichever server ran it.
    for it in &its {
        for c in it.rollout_campaigns.iter().chain(it.eval_campaign.iter()) {
            let v = store.get_campaign(*c).await.unwrap().unwrap();
            assert_eq!(v.status, store::Status::Completed, "campaign {c}");
            assert_eq!(v.counts.finished, v.total_episodes, "campaign {c}");
        }
    }
    // One update, straight from the base model (a version's lineage names no parent
    // version then).
    let v1 = PathBuf::from(its[1].version.clone().unwrap());
    let lineage: Value =
        serde_json::from_slice(&std::fs::read(v1.join("train.json")).unwrap()).unwrap();
    assert_eq!(lineage["parent"], Value::Null, "{lineage}");
    assert_eq!(view.version.as_deref(), its[1].version.as_deref());
}
