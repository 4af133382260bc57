//! The gym at its door, with real parts: a hostile page in our own browser pool tries every
//! cross-site write a browser allows without asking (form posts, `no-cors` fetches, a
//! beacon, body-less posts to pause and cancel) against a running web server, and nothing
//! in the database changes, while the dashboard's own buttons still work; `surfgym serve`
//! warns when bound beyond loopback and stops on SIGTERM with its Chromium processes.

use crate::common;

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::Request;
use axum::middleware::{self, Next};
use browser_pool::Action;
use common::{database_url, js, open_dashboard};
use engine::CampaignSpec;
use policy::PolicyRegistry;
use serde_json::{Value, json};
use sqlx::PgPool;
use store::TaskFilter;
use uuid::Uuid;

/// A task line as the attacker would plant it (valid, so only the door stops it).
fn planted(id: &str) -> Value {
    json!({
        "id": id, "site": "shop", "start_url": "http://127.0.0.1:9/",
        "rubric": {"groups": [{"facts": [{"check": {"type": "answer", "number": 1}}]}]},
        "instruction": "x"
    })
}

/// The hostile page: every write it can send to `api` without a CORS preflight, and two it
/// cannot (which the browser must stop at the preflight). `body[data-done]` marks the end.
fn hostile_page(api: &str, campaign: Uuid) -> String {
    let form_task = planted("planted-form").to_string();
    // A text/plain form sends `name=value`: the name carries the JSON up to the last
    // string, the value closes it, so the body parses as one task.
    let (form_name, form_value) = form_task.split_at(form_task.len() - 2);
    let attr = |s: &str| s.replace('&', "&amp;").replace('"', "&quot;");
    let line = planted("planted-fetch").to_string();
    format!(
        r#"<!doctype html><html><body><h1>Free prizes</h1>
<iframe name="f1"></iframe><iframe name="f2"></iframe><iframe name="f3"></iframe><iframe name="f4"></iframe>
<form id="a" method="POST" enctype="text/plain" target="f1" action="{api}/api/tasks/import"><input name="{n}" value="{v}"></form>
<form id="b" method="POST" enctype="text/plain" target="f2" action="{api}/api/tasks"><input name="{n}" value="{v}"></form>
<form id="c" method="POST" target="f3" action="{api}/api/campaigns/{campaign}/pause"><input name="x" value="1"></form>
<form id="d" method="POST" target="f4" action="{api}/api/campaigns/{campaign}/cancel"></form>
<script>
const api = {api:?};
const line = {line:?};
const frames = [...document.querySelectorAll('iframe')].map((f) => new Promise((ok) => f.addEventListener('load', ok, {{ once: true }})));
const settle = (p) => p.then(() => 'sent', (e) => 'blocked: ' + e);
const tries = [
  settle(fetch(api + '/api/tasks/import', {{ method: 'POST', mode: 'no-cors', body: line }})),
  settle(fetch(api + '/api/tasks', {{ method: 'POST', mode: 'no-cors', headers: {{ 'Content-Type': 'text/plain' }}, body: line }})),
  settle(fetch(api + '/api/campaigns/{campaign}/pause', {{ method: 'POST', mode: 'no-cors' }})),
  settle(fetch(api + '/api/campaigns/{campaign}/cancel', {{ method: 'POST', mode: 'no-cors' }})),
  settle(fetch(api + '/api/tasks', {{ method: 'POST', headers: {{ 'Content-Type': 'application/json' }}, body: line }})),
  settle(fetch(api + '/api/tasks/kept', {{ method: 'DELETE' }})),
];
navigator.sendBeacon(api + '/api/tasks/import', line);
for (const f of ['a', 'b', 'c', 'd']) document.getElementById(f).submit();
const late = new Promise((ok) => setTimeout(ok, 8000));
Promise.all([Promise.race([Promise.all(frames), late]), ...tries]).then((r) => {{
  document.body.dataset.results = JSON.stringify(r.slice(1));
  document.body.dataset.done = '1';
}});
</script></body></html>"#,
        n = attr(form_name),
        v = attr(form_value),
    )
}

/// Serves one page on a free loopback port: another origin than the API's, same site.
async fn serve_page(html: String) -> std::net::SocketAddr {
    let app = axum::Router::new().route(
        "/",
        axum::routing::get(move || {
            let html = html.clone();
            async move { axum::response::Html(html) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// Waits until `cond` holds on the session's page.
async fn wait_for(s: &browser_pool::Session, cond: &str, what: &str, limit: Duration) {
    let deadline = Instant::now() + limit;
    while js(s, cond).await != json!(true) {
        assert!(Instant::now() < deadline, "{what}: timed out");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What a write could change: the tasks, and the campaign's status and episode counts.
async fn snapshot(
    store: &store::Store,
    campaign: Uuid,
) -> (Vec<String>, i64, store::Status, store::CampaignCounts) {
    let (tasks, n) = store
        .list_tasks(&TaskFilter::default(), 100, 0)
        .await
        .unwrap();
    let c = store.get_campaign(campaign).await.unwrap().unwrap();
    (
        tasks.into_iter().map(|t| t.id).collect(),
        n,
        c.status,
        c.counts,
    )
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_hostile_page_cannot_write_to_the_gym(pool: PgPool) {
    let engine = common::new_engine(pool, PolicyRegistry::builtin());
    let store = engine.store().clone();
    let kept = tasks::parse_task(&planted("kept").to_string()).unwrap();
    store.insert_task(&kept).await.unwrap();
    let campaign = engine
        .create_campaign(CampaignSpec {
            tasks: Some(TaskFilter {
                ids: vec!["kept".into()],
                ..TaskFilter::default()
            }),
            rollouts_per_task: Some(3),
            ..CampaignSpec::default()
        })
        .await
        .unwrap();

    // The real router, with a log of what reached it and how it was answered.
    let seen: Arc<Mutex<Vec<(String, String, u16)>>> = Arc::default();
    let log = seen.clone();
    let app = web::router(web::AppState {
        engine: engine.clone(),
    })
    .layer(middleware::from_fn(move |req: Request, next: Next| {
        let log = log.clone();
        async move {
            let (method, path) = (req.method().to_string(), req.uri().path().to_string());
            let resp = next.run(req).await;
            log.lock()
                .unwrap()
                .push((method, path, resp.status().as_u16()));
            resp
        }
    }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let api_addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let api = format!("http://{api_addr}");
    let page = serve_page(hostile_page(&api, campaign)).await;

    let before = snapshot(&store, campaign).await;
    assert_eq!(before.2, store::Status::Queued);

    let mut s = engine.pool().await.unwrap().lease().await.unwrap();
    let r = s
        .act(&Action::Goto(format!("http://{page}/")))
        .await
        .unwrap();
    assert_eq!(r.error, None);
    wait_for(
        &s,
        "document.body.dataset.done === '1'",
        "the hostile page's attempts",
        Duration::from_secs(30),
    )
    .await;
    let results = js(&s, "document.body.dataset.results").await;
    assert_eq!(
        snapshot(&store, campaign).await,
        before,
        "the page changed the gym: {results}"
    );

    // The simple requests did reach the server, and each was refused there.
    let seen = seen.lock().unwrap().clone();
    let writes: Vec<_> = seen.iter().filter(|(m, _, _)| m == "POST").collect();
    for path in [
        "/api/tasks/import".to_string(),
        "/api/tasks".to_string(),
        format!("/api/campaigns/{campaign}/pause"),
        format!("/api/campaigns/{campaign}/cancel"),
    ] {
        assert!(
            writes.iter().any(|(_, p, _)| *p == path),
            "no POST to {path} arrived: {seen:?}"
        );
    }
    for (m, p, status) in &writes {
        assert!(
            *status == 403 || *status == 415,
            "{m} {p} answered {status}: {seen:?}"
        );
    }
    assert!(
        !seen.iter().any(|(m, _, _)| m == "DELETE"),
        "a preflighted write got through: {seen:?}"
    );

    // The dashboard's own buttons still work (same origin, JSON), and a finished campaign
    // offers none.
    let page = format!("{api}/#/campaigns/{campaign}");
    open_dashboard(&mut s, &page).await;
    assert_eq!(
        js(
            &s,
            "['btn-pause', 'btn-resume', 'btn-cancel'].map((b) => !!document.getElementById(b))"
        )
        .await,
        json!([true, false, true]),
        "a queued campaign offers pause and cancel"
    );
    js(&s, "document.getElementById('btn-pause').click(), true").await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while store.campaign_status(campaign).await.unwrap() != Some(store::Status::Paused) {
        assert!(
            Instant::now() < deadline,
            "the dashboard's pause did nothing"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    wait_for(
        &s,
        "!!document.getElementById('btn-resume') && !document.getElementById('btn-pause')",
        "the paused campaign's buttons",
        Duration::from_secs(10),
    )
    .await;
    js(&s, "document.getElementById('btn-cancel').click(), true").await;
    let deadline = Instant::now() + Duration::from_secs(10);
    // Cancelled, and its never-run episodes with it.
    loop {
        let c = store.get_campaign(campaign).await.unwrap().unwrap();
        if c.status == store::Status::Cancelled && c.counts.cancelled == 3 {
            assert_eq!(c.counts.pending, 0);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the dashboard's cancel did nothing: {} {:?}",
            c.status,
            c.counts
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    js(&s, "location.reload(), true").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    wait_for(
        &s,
        "!!document.body && document.body.dataset.ready === '1' && !!document.getElementById('campaign-name')",
        "the dashboard after reload",
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(
        js(
            &s,
            "document.querySelectorAll('#btn-pause, #btn-resume, #btn-cancel').length"
        )
        .await,
        json!(0),
        "a cancelled campaign offers no actions"
    );
    drop(s);
    engine.shutdown().await;
}

/// The processes below `root` (its children, theirs, ...), alive ones only.
fn descendants(root: u32) -> Vec<(u32, String)> {
    let mut procs = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // "pid (comm) state ppid ...": comm may hold spaces, so split after its `)`.
        let Some((head, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let (state, ppid) = (fields.next().unwrap_or("Z"), fields.next().unwrap_or("0"));
        if state == "Z" || state == "X" {
            continue;
        }
        let comm = head.split_once('(').map_or("", |(_, c)| c).to_string();
        procs.push((pid, ppid.parse::<u32>().unwrap_or(0), comm));
    }
    let mut found = vec![root];
    let mut out = Vec::new();
    while let Some(p) = found.pop() {
        for (pid, ppid, comm) in &procs {
            if *ppid == p {
                found.push(*pid);
                out.push((*pid, comm.clone()));
            }
        }
    }
    out
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        let state = s.rsplit_once(')').map_or("", |(_, r)| r.trim_start());
        !state.starts_with('Z') && !state.starts_with('X')
    })
}

/// The server under test, killed with its process group if the test fails early.
struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let pgid = i32::try_from(self.0.id()).expect("pids fit an i32");
            assert!(pgid > 1);
            // SAFETY: kill(2) with a negative pid other than -1 signals exactly the
            // process group the server leads (spawned with `process_group(0)`).
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
            let _ = self.0.wait();
        }
    }
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn serve_warns_beyond_loopback_and_stops_on_sigterm_with_its_browsers(pool: PgPool) {
    let db = database_url(&pool);
    let log = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("serve-sigterm-{}.log", Uuid::new_v4().simple()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_surfgym"))
        .args([
            "serve",
            "--bind",
            "0.0.0.0",
            "--port",
            "0",
            "--sites-port",
            "0",
        ])
        .env("DATABASE_URL", &db)
        .env("SURFGYM_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let pid = child.id();
    let serve = Serve(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let port = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("serve printed its address");
        if let Some(rest) = line.strip_prefix("dashboard and API: http://0.0.0.0:") {
            break rest.split('/').next().unwrap().parse::<u16>().unwrap();
        }
    };
    let warning = std::fs::read_to_string(&log).unwrap();
    assert!(
        warning.contains("WARN") && warning.contains("every route needs an API token"),
        "no warning for --bind 0.0.0.0: {warning}"
    );

    // A campaign, so that Chromium runs: beyond loopback, with a token only.
    let http = reqwest::Client::new();
    let api = format!("http://127.0.0.1:{port}");
    let unauthenticated = http
        .post(format!("{api}/api/campaigns"))
        .json(&json!({"policy": "random"}))
        .send()
        .await
        .unwrap();
    assert_eq!(unauthenticated.status(), 401);
    let (_, token) = store::Store::from_pool(pool.clone())
        .create_token(store::Scope::Write, "sigterm test")
        .await
        .unwrap();
    let resp = http
        .post(format!("{api}/api/campaigns"))
        .bearer_auth(&token)
        .json(&json!({"policy": "random"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 202, "{}", resp.text().await.unwrap());
    let deadline = Instant::now() + Duration::from_secs(60);
    let browsers = loop {
        let chromium: Vec<u32> = descendants(pid)
            .into_iter()
            .filter(|(_, comm)| comm.to_lowercase().contains("chrom"))
            .map(|(p, _)| p)
            .collect();
        if !chromium.is_empty() {
            break descendants(pid);
        }
        assert!(Instant::now() < deadline, "Chromium never started");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };

    // SIGTERM to the server alone, as systemd, Docker or Kubernetes send it.
    let spid = i32::try_from(pid).unwrap();
    assert!(spid > 1);
    // SAFETY: kill(2) with a positive pid signals exactly that process.
    unsafe { libc::kill(spid, libc::SIGTERM) };
    let mut serve = serve;
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = serve.0.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "serve ignored SIGTERM");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        status.success(),
        "serve did not shut down cleanly: {status:?}"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left: Vec<_> = browsers.iter().filter(|(p, _)| alive(*p)).collect();
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "processes outlived serve: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
