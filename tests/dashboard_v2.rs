//! Dashboard v2's triage, replay additions and live list, in real Chromium through the
//! project's pool, over real Postgres: a campaign stored with known results (end reasons,
//! infrastructure and rubric errors, page events, verdicts) shows the API's counts on the
//! triage page, whose examples open their episodes; the replay shows each step's elements
//! as an accessibility view with their numbers, the policy call (prompt with its images,
//! raw output, token log-probabilities), legible set-of-marks labels, and moves by keys;
//! lists move by keys with visible focus; a running campaign updates the campaign list
//! without a reload; and strings from pages, tasks and models stay text in all of it.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use browser_pool::Session;
use common::{js, open_dashboard, serve_web};
use engine::CampaignSpec;
use engine::policy::PolicyRegistry;
use engine::store::TaskFilter;
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

fn artifact(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Saves what the session's page shows as a PNG, for reviewers.
async fn screenshot(s: &mut Session, name: &str) {
    let shot = s.observe().await.unwrap().screenshot;
    image::load_from_memory(&shot.bytes)
        .unwrap()
        .save(artifact(&format!("{name}.png")))
        .unwrap();
}

async fn press(s: &mut Session, key: &str) {
    let action = browser_pool::parse_action(&format!("press({key:?})")).unwrap();
    let r = s.act(&action).await.unwrap();
    assert_eq!(r.error, None, "press {key}");
}

/// Polls `expr` until it is true.
async fn until(s: &Session, expr: &str, what: &str, within: Duration) {
    let deadline = Instant::now() + within;
    while js(s, expr).await != json!(true) {
        assert!(Instant::now() < deadline, "{what}: `{expr}` never held");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

const HOSTILE_INSTRUCTION: &str = r#"<img src=x onerror="window.__xss=1">Buy <b>it</b>"#;
const HOSTILE_FACT: &str = "<script>window.__xss=2</script>";
const HOSTILE_DIALOG: &str = "<img src=d onerror=window.__xss=3>";
const HOSTILE_INFRA: &str = "browser_pool: <img src=z onerror=window.__xss=4>";
const HOSTILE_RUBRIC: &str = "invalid selector <b>a[</b>";
const HOSTILE_LABEL: &str = "<img src=q onerror=window.__xss=5>";
const HOSTILE_OUTPUT: &str = "<img src=o onerror=window.__xss=6> click(1)";

fn task(id: &str, site: &str, instruction: &str) -> tasks::Task {
    tasks::parse_task(
        &json!({
            "id": id, "site": site, "start_url": "http://127.0.0.1:9/", "instruction": instruction,
            "rubric": {"groups": [{"id": "g1", "facts": [
                {"id": "g1.f1", "description": HOSTILE_FACT, "check": {"type": "answer", "contains": "a"}},
                {"id": "g1.f2", "description": "the order is placed", "check": {"type": "answer", "contains": "b"}}
            ]}]}
        })
        .to_string(),
    )
    .unwrap()
}

/// A small PNG of one colour, stored as a blob; its hash.
async fn blob(pool: &PgPool, shade: u8) -> String {
    let img = image::RgbImage::from_pixel(640, 360, image::Rgb([shade, 200, 255 - shade]));
    let mut bytes = Vec::new();
    image::DynamicImage::ImageRgb8(img)
        .write_to(
            &mut std::io::Cursor::new(&mut bytes),
            image::ImageFormat::Png,
        )
        .unwrap();
    let hash = engine::store::blob_hash(&bytes);
    sqlx::query(
        "INSERT INTO blobs (hash, mime, bytes) VALUES ($1, 'image/png', $2) ON CONFLICT DO NOTHING",
    )
    .bind(&hash)
    .bind(bytes)
    .execute(pool)
    .await
    .unwrap();
    hash
}

/// One episode's outcome, as a runner would have stored it.
async fn finish(pool: &PgPool, id: Uuid, end: &str, success: Option<bool>, extra: &str) {
    sqlx::query(&format!(
        "UPDATE episodes SET status = 'finished', end_reason = $2, success = $3,
            score = CASE WHEN $3 IS NULL THEN NULL WHEN $3 THEN 1.0 ELSE 0.0 END,
            steps = 2, attempts = 1, started_at = now(), finished_at = now(), duration_ms = 1000 {extra}
         WHERE id = $1"
    ))
    .bind(id)
    .bind(end)
    .bind(success)
    .execute(pool)
    .await
    .unwrap();
}

async fn verdicts(pool: &PgPool, id: Uuid, f1: Option<bool>, f2: Option<bool>) {
    for (ord, (fact, passed)) in [("g1.f1", f1), ("g1.f2", f2)].into_iter().enumerate() {
        let (evidence, reason) = if passed.is_some() {
            ("seen", "because")
        } else {
            ("", "")
        };
        sqlx::query(
            "INSERT INTO verdicts (episode_id, judge, group_id, fact_id, ord, passed, evidence, reason)
             VALUES ($1, 'rule', 'g1', $2, $3, $4, $5, $6)",
        )
        .bind(id)
        .bind(fact)
        .bind(ord as i32)
        .bind(passed)
        .bind(evidence)
        .bind(reason)
        .execute(pool)
        .await
        .unwrap();
    }
}

/// Steps of one episode: (screenshot, elements, events, prompt, raw output, token
/// log-probabilities, token ids).
type Step = (
    Option<String>,
    Value,
    Value,
    Option<String>,
    Option<String>,
    Option<Vec<f32>>,
    Option<Vec<i32>>,
);

async fn steps(pool: &PgPool, id: Uuid, steps: Vec<Step>) {
    for (idx, (shot, elements, events, prompt, raw, lps, ids)) in steps.into_iter().enumerate() {
        sqlx::query(
            "INSERT INTO steps (episode_id, idx, url, title, screenshot, elements, action, raw_output,
                observe_ms, policy_ms, act_ms, events, prompt, token_logprobs, token_ids)
             VALUES ($1, $2, 'http://127.0.0.1:9/', $3, $4, $5, 'click(1)', $6, 10, 20, 30, $7, $8, $9, $10)",
        )
        .bind(id)
        .bind(idx as i32)
        .bind(format!("Shop {HOSTILE_LABEL}"))
        .bind(shot)
        .bind(elements)
        .bind(raw)
        .bind(events)
        .bind(prompt)
        .bind(lps)
        .bind(ids)
        .execute(pool)
        .await
        .unwrap();
    }
}

fn element(id: u32, role: &str, label: &str, x: f64, y: f64, in_viewport: bool) -> Value {
    json!({"id": id, "tag": "button", "role": role, "label": label, "disabled": false,
        "bbox": {"x": x, "y": y, "width": 120.0, "height": 30.0}, "in_viewport": in_viewport})
}

struct Fixture {
    campaign: Uuid,
    /// Episodes by (task, rollout).
    episodes: BTreeMap<(String, i32), Uuid>,
    /// The screenshots of the replayed episode's two steps.
    shots: [String; 2],
}

/// Two tasks × three rollouts with known outcomes, and a second campaign left pending.
async fn fixture(engine: &engine::Engine, pool: &PgPool) -> Fixture {
    engine
        .store()
        .insert_task(&task("t-shop", "shop", HOSTILE_INSTRUCTION))
        .await
        .unwrap();
    engine
        .store()
        .insert_task(&task("t-wiki", "wiki", "read it"))
        .await
        .unwrap();
    let spec = |rollouts| CampaignSpec {
        name: Some("known results".into()),
        tasks: Some(TaskFilter {
            ids: vec!["t-shop".into(), "t-wiki".into()],
            ..TaskFilter::default()
        }),
        rollouts_per_task: Some(rollouts),
        ..CampaignSpec::default()
    };
    let campaign = engine.create_campaign(spec(3)).await.unwrap();
    engine.create_campaign(spec(1)).await.unwrap();
    let rows: Vec<(Uuid, String, i32)> =
        sqlx::query_as("SELECT id, task_id, rollout FROM episodes WHERE campaign_id = $1")
            .bind(campaign)
            .fetch_all(pool)
            .await
            .unwrap();
    let episodes: BTreeMap<(String, i32), Uuid> =
        rows.into_iter().map(|(id, t, r)| ((t, r), id)).collect();
    let ep = |t: &str, r: i32| episodes[&(t.to_string(), r)];

    finish(pool, ep("t-shop", 0), "answered", Some(true), "").await;
    verdicts(pool, ep("t-shop", 0), Some(true), Some(true)).await;
    finish(pool, ep("t-shop", 1), "answered", Some(false), "").await;
    verdicts(pool, ep("t-shop", 1), Some(true), Some(false)).await;
    finish(pool, ep("t-shop", 2), "max_steps", Some(false), "").await;
    verdicts(pool, ep("t-shop", 2), Some(false), Some(false)).await;
    sqlx::query(
        "UPDATE episodes SET status = 'failed', attempts = 3, last_error = $2, finished_at = now() WHERE id = $1",
    )
    .bind(ep("t-wiki", 0))
    .bind(HOSTILE_INFRA)
    .execute(pool)
    .await
    .unwrap();
    finish(
        pool,
        ep("t-wiki", 1),
        "stopped",
        Some(false),
        ", last_error = 'policy: backend unavailable'",
    )
    .await;
    verdicts(pool, ep("t-wiki", 1), Some(false), None).await;
    sqlx::query(
        "UPDATE episodes SET status = 'finished', end_reason = 'answered', judge_error = $2,
            steps = 1, attempts = 1, started_at = now(), finished_at = now() WHERE id = $1",
    )
    .bind(ep("t-wiki", 2))
    .bind(HOSTILE_RUBRIC)
    .execute(pool)
    .await
    .unwrap();

    // The replayed episode: two steps, the second a model call with two images.
    let shots = [blob(pool, 10).await, blob(pool, 200).await];
    let elements = json!([
        element(1, "button", "Add to cart", 40.0, 100.0, true),
        element(2, "link", HOSTILE_LABEL, 300.0, 100.0, true),
        element(3, "textbox", "Search", 40.0, 20.0, true),
        element(4, "link", "Footer", 40.0, 2000.0, false),
    ]);
    let dialog = json!([{"kind": "dialog", "dialog": "alert", "message": HOSTILE_DIALOG, "accepted": true, "count": 2}]);
    let blocked =
        json!([{"kind": "blocked", "url": "http://evil.example/", "reason": "not allowed"}]);
    steps(
        pool,
        ep("t-shop", 1),
        vec![
            (
                Some(shots[0].clone()),
                elements.clone(),
                dialog,
                None,
                None,
                None,
                None,
            ),
            (
                Some(shots[1].clone()),
                elements,
                blocked,
                Some(format!(
                    "<|im_start|>user\n<image>earlier\n<image>now: {HOSTILE_LABEL}<|im_end|>"
                )),
                Some(HOSTILE_OUTPUT.into()),
                Some(vec![-0.01, -2.5, -0.2]),
                Some(vec![11, 22, 33]),
            ),
        ],
    )
    .await;
    let download = json!([{"kind": "download", "url": "http://127.0.0.1:9/f.zip", "filename": "f.zip"},
        {"kind": "script_stopped", "during": "observe"}]);
    steps(
        pool,
        ep("t-wiki", 1),
        vec![(None, json!([]), download, None, None, None, None)],
    )
    .await;
    Fixture {
        campaign,
        episodes,
        shots,
    }
}

async fn get(addr: std::net::SocketAddr, path: &str) -> Value {
    let r = reqwest::get(format!("http://{addr}{path}")).await.unwrap();
    let status = r.status();
    let body: Value = r.json().await.unwrap();
    assert_eq!(status, 200, "{path}: {body}");
    body
}

/// The rows of a triage table as {first cell: {class: text}}.
async fn table(s: &Session, id: &str) -> Value {
    js(
        s,
        &format!(
            "Object.fromEntries(Array.from(document.querySelectorAll('#{id} tbody tr')).map(tr =>
                [tr.cells[0].textContent + (tr.querySelector('.c-fact') ? ' ' + tr.querySelector('.c-fact').textContent : '')
                    + (tr.querySelector('.c-kind') && tr.cells[0].classList.contains('c-site') ? ' ' + tr.querySelector('.c-kind').title : ''),
                 Object.fromEntries(Array.from(tr.cells).filter(c => c.className.match(/\\bc-/))
                    .map(c => [c.className.match(/\\bc-[a-z-]+/)[0], c.textContent])),
                ]))"
        ),
    )
    .await
}

#[sqlx::test(migrator = "engine::store::MIGRATOR")]
async fn triage_shows_the_apis_counts_and_links_examples(pool: PgPool) {
    let engine = common::new_engine(pool.clone(), PolicyRegistry::builtin());
    let f = fixture(&engine, &pool).await;
    let ep = |t: &str, r: i32| f.episodes[&(t.to_string(), r)];
    let addr = serve_web(&engine).await;

    // The API's groups are the fixture's known results.
    let t = get(addr, &format!("/api/triage?campaign={}", f.campaign)).await;
    assert_eq!(
        t["totals"],
        json!({"episodes": 6, "finished": 5, "successes": 1, "failed": 1, "judge_errors": 1, "infra_errors": 2})
    );
    let reasons: BTreeMap<String, (i64, i64, i64, i64)> = t["end_reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let n = |k: &str| g[k].as_i64().unwrap();
            (
                g["end_reason"].as_str().unwrap().to_string(),
                (
                    n("episodes"),
                    n("successes"),
                    n("failures"),
                    n("judge_errors"),
                ),
            )
        })
        .collect();
    assert_eq!(
        reasons,
        BTreeMap::from([
            ("answered".into(), (3, 1, 1, 1)),
            ("max_steps".into(), (1, 0, 1, 0)),
            ("stopped".into(), (1, 0, 1, 0)),
        ])
    );
    let answered = t["end_reasons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["end_reason"] == "answered")
        .unwrap();
    assert_eq!(answered["examples"].as_array().unwrap().len(), 3);
    assert_ne!(
        answered["examples"][0],
        json!(ep("t-shop", 0)),
        "unsuccessful examples come first"
    );
    assert_eq!(
        t["infra_failures"],
        json!([
            {"kind": "browser_pool", "episodes": 1, "gave_up": 1, "finished": 0, "sample": HOSTILE_INFRA, "examples": [ep("t-wiki", 0)]},
            {"kind": "policy", "episodes": 1, "gave_up": 0, "finished": 1, "sample": "policy: backend unavailable", "examples": [ep("t-wiki", 1)]},
        ])
    );
    assert_eq!(t["judge_errors"][0]["kind"], HOSTILE_RUBRIC);
    let events: BTreeMap<String, (i64, i64, i64)> = t["page_events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let n = |k: &str| g[k].as_i64().unwrap();
            (
                format!(
                    "{} {}",
                    g["site"].as_str().unwrap(),
                    g["kind"].as_str().unwrap()
                ),
                (n("events"), n("steps"), n("episodes")),
            )
        })
        .collect();
    assert_eq!(
        events,
        BTreeMap::from([
            ("shop dialog".into(), (2, 1, 1)),
            ("shop blocked".into(), (1, 1, 1)),
            ("wiki download".into(), (1, 1, 1)),
            ("wiki script_stopped".into(), (1, 1, 1)),
        ])
    );
    assert_eq!(t["page_events"][0]["kind"], "dialog", "most frequent first");
    assert_eq!(t["page_events"][0]["sample"], HOSTILE_DIALOG);
    let facts: Vec<(String, String, i64, i64, i64)> = t["facts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["task_id"].as_str().unwrap().to_string(),
                g["fact_id"].as_str().unwrap().to_string(),
                g["failed"].as_i64().unwrap(),
                g["passed"].as_i64().unwrap(),
                g["unchecked"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        facts,
        vec![
            ("t-shop".into(), "g1.f2".into(), 2, 1, 0),
            ("t-shop".into(), "g1.f1".into(), 1, 2, 0),
            ("t-wiki".into(), "g1.f1".into(), 1, 0, 0),
        ],
        "the fact that fails most first"
    );
    assert_eq!(t["facts"][1]["description"], HOSTILE_FACT);
    // Across campaigns: the pending second campaign's two episodes count too.
    let all = get(addr, "/api/triage").await;
    assert_eq!(all["campaign"], Value::Null);
    assert_eq!(all["totals"]["episodes"], 8);
    assert_eq!(all["end_reasons"], t["end_reasons"]);
    let bad = reqwest::get(format!("http://{addr}/api/triage?campaign=nope"))
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let body: Value = bad.json().await.unwrap();
    assert_eq!(body["error"]["fields"][0]["field"], "campaign");
    let missing = reqwest::get(format!("http://{addr}/api/triage?campaign={}", Uuid::nil()))
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);

    // The page shows the same numbers.
    let mut s = engine.pool().await.unwrap().lease().await.unwrap();
    open_dashboard(&mut s, &format!("http://{addr}/#/campaigns/{}", f.campaign)).await;
    js(&s, "document.getElementById('btn-triage').click()").await;
    until(
        &s,
        "location.hash.startsWith('#/triage') && document.body.dataset.ready === '1' && !!document.getElementById('end-reasons')",
        "the campaign's Triage button opens its triage",
        Duration::from_secs(30),
    )
    .await;
    assert_eq!(
        js(&s, "document.getElementById('triage-scope').textContent").await,
        json!("known results")
    );
    for (id, want) in [
        ("triage-episodes", "6"),
        ("triage-finished", "5"),
        ("triage-failed", "1"),
        ("triage-infra", "2"),
        ("triage-judge-errors", "1"),
    ] {
        assert_eq!(
            js(
                &s,
                &format!("document.querySelector('#{id} .stat-value').textContent")
            )
            .await,
            json!(want),
            "{id}"
        );
    }
    let page = table(&s, "end-reasons").await;
    for g in t["end_reasons"].as_array().unwrap() {
        let row = &page[g["end_reason"].as_str().unwrap()];
        for k in ["episodes", "successes", "failures", "judge_errors"] {
            assert_eq!(
                row[format!("c-{}", k.replace('_', "-"))],
                json!(g[k].to_string()),
                "{} {k}",
                g["end_reason"]
            );
        }
    }
    let page = table(&s, "failing-facts").await;
    for g in t["facts"].as_array().unwrap() {
        let row = &page[format!(
            "{} {}",
            g["task_id"].as_str().unwrap(),
            g["fact_id"].as_str().unwrap()
        )];
        assert_eq!(row["c-failed"], json!(g["failed"].to_string()));
        assert_eq!(row["c-passed"], json!(g["passed"].to_string()));
        assert_eq!(
            row["c-description"], g["description"],
            "as text, not markup"
        );
    }
    let page = table(&s, "page-events").await;
    for g in t["page_events"].as_array().unwrap() {
        let row = &page[format!(
            "{} {}",
            g["site"].as_str().unwrap(),
            g["kind"].as_str().unwrap()
        )];
        assert_eq!(row["c-events"], json!(g["events"].to_string()));
        assert_eq!(row["c-episodes"], json!(g["episodes"].to_string()));
    }
    let page = table(&s, "infra-failures").await;
    assert_eq!(page["browser_pool"]["c-gave-up"], "1");
    assert_eq!(page["policy"]["c-finished"], "1");
    // Example links name the API's examples.
    let links = js(
        &s,
        "Array.from(document.querySelectorAll('#failing-facts tbody tr:first-child .example-link')).map(a => a.getAttribute('href'))",
    )
    .await;
    let want: Vec<String> = t["facts"][0]["examples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| format!("#/episodes/{}", id.as_str().unwrap()))
        .collect();
    assert_eq!(links, json!(want));
    // Strings from pages, tasks and models are text: nothing injected ran or rendered.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(js(&s, "typeof window.__xss").await, json!("undefined"));
    assert_eq!(
        js(
            &s,
            "document.querySelectorAll('#triage-body img, #triage-body script, #triage-body b').length"
        )
        .await,
        json!(0)
    );
    for text in [HOSTILE_FACT, HOSTILE_DIALOG, HOSTILE_INFRA, HOSTILE_RUBRIC] {
        assert_eq!(
            js(
                &s,
                &format!("document.body.innerText.includes({})", json!(text))
            )
            .await,
            json!(true),
            "{text} shown as text"
        );
    }
    screenshot(&mut s, "triage").await;

    // Keys: a focused row moves down with ↓ (focus drawn) and Enter opens its example.
    js(
        &s,
        "document.querySelector('#failing-facts tbody tr').focus()",
    )
    .await;
    press(&mut s, "ArrowDown").await;
    assert_eq!(
        js(
            &s,
            "document.activeElement === document.querySelectorAll('#failing-facts tbody tr')[1]"
        )
        .await,
        json!(true)
    );
    assert_eq!(
        js(
            &s,
            "document.activeElement.matches(':focus-visible') && getComputedStyle(document.activeElement).outlineStyle"
        )
        .await,
        json!("solid"),
        "focus is visible"
    );
    let second = t["facts"][1]["examples"][0].as_str().unwrap().to_string();
    press(&mut s, "Enter").await;
    until(
        &s,
        &format!(
            "location.hash === '#/episodes/{second}' && document.body.dataset.ready === '1' && !!document.getElementById('outcome')"
        ),
        "Enter opens the row's example episode",
        Duration::from_secs(30),
    )
    .await;

    // Every campaign's triage from the nav.
    js(&s, "document.getElementById('nav-triage').click()").await;
    until(
        &s,
        "location.hash === '#/triage' && !!document.querySelector('#triage-episodes .stat-value')",
        "the nav's triage",
        Duration::from_secs(30),
    )
    .await;
    until(
        &s,
        "document.querySelector('#triage-episodes .stat-value').textContent === '8'",
        "every campaign's episodes",
        Duration::from_secs(30),
    )
    .await;
    s.close().await;
    engine.shutdown().await;
}

#[sqlx::test(migrator = "engine::store::MIGRATOR")]
async fn the_replay_shows_elements_and_the_policy_call_and_moves_by_keys(pool: PgPool) {
    let engine = common::new_engine(pool.clone(), PolicyRegistry::builtin());
    let f = fixture(&engine, &pool).await;
    let episode = f.episodes[&("t-shop".to_string(), 1)];
    let addr = serve_web(&engine).await;
    let mut s = engine.pool().await.unwrap().lease().await.unwrap();
    open_dashboard(&mut s, &format!("http://{addr}/#/episodes/{episode}")).await;

    // The accessibility view: every element with its number, in reading order, the
    // off-screen one apart.
    let nodes = js(
        &s,
        "Array.from(document.querySelectorAll('#a11y-tree .a11y-node')).map(n => n.textContent)",
    )
    .await;
    assert_eq!(
        nodes,
        json!([
            "[3] textbox \"Search\"",
            "[1] button \"Add to cart\"",
            format!("[2] link {}", json!(HOSTILE_LABEL)),
            "[4] link \"Footer\"",
        ])
    );
    assert_eq!(
        js(
            &s,
            "document.querySelector('#a11y-tree .a11y-group').textContent.startsWith('off-screen (1)')"
        )
        .await,
        json!(true)
    );
    assert_eq!(
        js(&s, "document.getElementById('policy-call-none') !== null").await,
        json!(true),
        "the first step made no model call"
    );

    // Keys move between steps.
    let counter = "document.getElementById('step-counter').textContent";
    assert_eq!(js(&s, counter).await, json!("1 / 2"));
    press(&mut s, "ArrowRight").await;
    assert_eq!(js(&s, counter).await, json!("2 / 2"));
    press(&mut s, "End").await;
    assert_eq!(js(&s, counter).await, json!("final / 2"));
    press(&mut s, "Home").await;
    assert_eq!(js(&s, counter).await, json!("1 / 2"));
    press(&mut s, "ArrowRight").await;

    // The second step's policy call: the prompt's two images are the two steps'
    // screenshots, the raw output is text, a chip per token.
    let images = js(
        &s,
        "Array.from(document.querySelectorAll('#step-prompt .prompt-image img')).map(i => i.getAttribute('src'))",
    )
    .await;
    assert_eq!(
        images,
        json!([
            format!("/api/blobs/{}", f.shots[0]),
            format!("/api/blobs/{}", f.shots[1])
        ])
    );
    assert_eq!(
        js(&s, "document.getElementById('step-raw-output').textContent").await,
        json!(HOSTILE_OUTPUT)
    );
    assert_eq!(
        js(
            &s,
            "Array.from(document.querySelectorAll('#step-tokens .token')).map(t => t.textContent)"
        )
        .await,
        json!(["#11-0.01", "#22-2.50", "#33-0.20"])
    );
    assert_eq!(
        js(
            &s,
            "document.getElementById('step-prompt').textContent.includes('now: ' + String.fromCharCode(60) + 'img src=q')"
        )
        .await,
        json!(true),
        "the prompt's text around its images"
    );

    // `e` shows the element numbers on the screenshot, legible: at least 12 px.
    press(&mut s, "e").await;
    until(
        &s,
        "document.querySelectorAll('#overlay .el-num').length === 3",
        "the visible elements' numbers",
        Duration::from_secs(5),
    )
    .await;
    let size = js(
        &s,
        "Array.from(document.querySelectorAll('#overlay .el-num')).map(n => [parseFloat(getComputedStyle(n).fontSize), n.getBoundingClientRect().height, getComputedStyle(n).color, getComputedStyle(n).backgroundColor])",
    )
    .await;
    for n in size.as_array().unwrap() {
        assert!(n[0].as_f64().unwrap() >= 12.0, "font size {n}");
        assert!(n[1].as_f64().unwrap() >= 12.0, "label height {n}");
        assert_eq!(n[2], "rgb(255, 255, 255)", "{n}");
        assert_eq!(n[3], "rgb(49, 46, 129)", "{n}");
    }
    // Nothing injected ran; the page's and model's strings are text.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(js(&s, "typeof window.__xss").await, json!("undefined"));
    assert_eq!(
        js(
            &s,
            "document.querySelectorAll('#a11y-tree img, #step-raw-output img, #instruction img, #instruction b, .prompt-text img').length"
        )
        .await,
        json!(0)
    );
    js(
        &s,
        "document.getElementById('policy-call').scrollIntoView()",
    )
    .await;
    screenshot(&mut s, "replay-policy-call").await;
    s.close().await;
    engine.shutdown().await;
}

#[sqlx::test(migrator = "engine::store::MIGRATOR")]
async fn a_running_campaign_updates_the_list_without_a_reload(pool: PgPool) {
    let (engine, _sites, _) = common::engine_with_sites(pool, PolicyRegistry::builtin()).await;
    let addr = serve_web(&engine).await;
    let mut s = engine.pool().await.unwrap().lease().await.unwrap();
    open_dashboard(&mut s, &format!("http://{addr}/#/")).await;
    assert_eq!(
        js(&s, "document.querySelectorAll('tr.campaign-row').length").await,
        json!(0)
    );
    // Were the page reloaded, this would be gone.
    js(&s, "window.__same_page = true").await;

    let id = engine
        .create_campaign(CampaignSpec {
            name: Some("live <b>one</b>".into()),
            policy: Some("scripted".into()),
            tasks: Some(TaskFilter {
                site: Some("wiki".into()),
                difficulty: Some("easy".into()),
                ..TaskFilter::default()
            }),
            rollouts_per_task: Some(2),
            ..CampaignSpec::default()
        })
        .await
        .unwrap();
    // The idle list polls every 15 s: the pushed event brings the new campaign first.
    until(
        &s,
        &format!("!!document.querySelector('tr.campaign-row[data-id=\"{id}\"]')"),
        "the new campaign appears in the list",
        Duration::from_secs(8),
    )
    .await;
    // A keyboard user's place in the list survives its redraws.
    js(
        &s,
        &format!("document.querySelector('tr.campaign-row[data-id=\"{id}\"]').focus()"),
    )
    .await;
    let runner = {
        let engine = engine.clone();
        tokio::spawn(async move { engine.run_campaign(id).await })
    };
    let total = engine
        .store()
        .get_campaign(id)
        .await
        .unwrap()
        .unwrap()
        .total_episodes;
    let label = format!(
        "(document.querySelector('tr.campaign-row[data-id=\"{id}\"] .progress-label') || {{}}).textContent || ''"
    );
    // Progress advances on the page as episodes finish, then the campaign completes.
    until(
        &s,
        &format!("({label}).startsWith('{total} / {total}') && !!document.querySelector('tr.campaign-row[data-id=\"{id}\"] .badge-completed')"),
        "the list follows the campaign to its end",
        Duration::from_secs(240),
    )
    .await;
    assert_eq!(runner.await.unwrap().unwrap(), "completed");
    assert_eq!(js(&s, "window.__same_page === true").await, json!(true));
    assert_eq!(
        js(&s, "document.activeElement.dataset.id").await,
        json!(id.to_string()),
        "the redrawn row has the focus back"
    );
    assert_eq!(
        js(
            &s,
            "document.querySelectorAll('#campaigns b').length === 0 && document.body.innerText.includes('live <b>one</b>')"
        )
        .await,
        json!(true),
        "the campaign's name is text"
    );
    screenshot(&mut s, "live-list").await;
    s.close().await;
    engine.shutdown().await;
}
