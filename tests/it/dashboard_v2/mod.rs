//! Dashboard v2's triage, replay additions and live list, in real Chromium through the
//! project's pool, over real Postgres: a campaign stored with known results (end reasons,
//! infrastructure and rubric errors, page events, verdicts) shows the API's counts on the
//! triage page, whose examples open their episodes; the replay shows each step's elements
//! as an accessibility view with their numbers, the policy call (prompt with its images,
//! raw output, token log-probabilities), legible set-of-marks labels, and moves by keys;
//! lists move by keys with visible focus; a running campaign updates the campaign list
//! without a reload; and strings from pages, tasks and models stay text in all of it.

use crate::common;
mod live;
mod replay;
mod triage;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use browser_pool::Session;
use common::{js, open_dashboard, serve_web};
use engine::CampaignSpec;
use policy::PolicyRegistry;
use serde_json::{Value, json};
use sqlx::PgPool;
use store::{EpisodeStatus, TaskFilter};
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
    let hash = store::blob_hash(&bytes);
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
        "UPDATE episodes SET status = $4, end_reason = $2, success = $3,
            score = CASE WHEN $3 IS NULL THEN NULL WHEN $3 THEN 1.0 ELSE 0.0 END,
            steps = 2, attempts = 1, started_at = now(), finished_at = now(), duration_ms = 1000 {extra}
         WHERE id = $1"
    ))
    .bind(id)
    .bind(end)
    .bind(success)
    .bind(EpisodeStatus::Finished)
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
        "UPDATE episodes SET status = $3, attempts = 3, last_error = $2, finished_at = now() WHERE id = $1",
    )
    .bind(ep("t-wiki", 0))
    .bind(HOSTILE_INFRA)
    .bind(EpisodeStatus::Failed)
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
        "UPDATE episodes SET status = $3, end_reason = 'answered', judge_error = $2,
            steps = 1, attempts = 1, started_at = now(), finished_at = now() WHERE id = $1",
    )
    .bind(ep("t-wiki", 2))
    .bind(HOSTILE_RUBRIC)
    .bind(EpisodeStatus::Finished)
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
