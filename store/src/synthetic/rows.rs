//! The rows of one batch of planned episodes, column by column (what `unnest` takes):
//! each episode's final fields, its steps (actions, thoughts, timings, screenshot
//! references, elements) and its verdicts. Pure: no I/O. JSON and array columns are
//! carried as text and cast by Postgres, so that a few pre-rendered variants are shared
//! across millions of rows instead of being built for each.

use chrono::{DateTime, Duration, Utc};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use uuid::Uuid;

use super::plan::{Plan, PlannedEpisode};
use crate::state::EpisodeStatus;

/// Column arrays of `episodes` rows.
#[derive(Default)]
pub(super) struct EpisodeCols {
    pub id: Vec<Uuid>,
    pub campaign_id: Vec<Uuid>,
    pub task_id: Vec<String>,
    pub rollout: Vec<i32>,
    pub seed: Vec<i64>,
    pub status: Vec<EpisodeStatus>,
    pub end_reason: Vec<Option<&'static str>>,
    pub success: Vec<Option<bool>>,
    pub score: Vec<Option<f64>>,
    pub final_answer: Vec<Option<String>>,
    pub final_url: Vec<Option<String>>,
    pub final_screenshot: Vec<Option<String>>,
    pub steps: Vec<i32>,
    pub attempts: Vec<i32>,
    pub last_error: Vec<Option<String>>,
    pub started_at: Vec<Option<DateTime<Utc>>>,
    pub finished_at: Vec<Option<DateTime<Utc>>>,
    pub duration_ms: Vec<Option<i32>>,
    pub judge_error: Vec<Option<String>>,
    /// `policy` as JSON text.
    pub policy: Vec<Option<String>>,
    /// `visited_urls` as an array literal.
    pub visited: Vec<Option<String>>,
}

/// Column arrays of `steps` rows.
#[derive(Default)]
pub(super) struct StepCols {
    pub episode_id: Vec<Uuid>,
    pub idx: Vec<i32>,
    pub url: Vec<String>,
    pub title: Vec<String>,
    pub screenshot: Vec<String>,
    /// `elements`, `events` and `tabs` as JSON text.
    pub elements: Vec<&'static str>,
    pub events: Vec<&'static str>,
    pub tabs: Vec<String>,
    pub action: Vec<String>,
    pub thought: Vec<String>,
    pub raw_output: Vec<String>,
    pub action_error: Vec<Option<&'static str>>,
    pub click_x: Vec<Option<f32>>,
    pub click_y: Vec<Option<f32>>,
    pub logprob: Vec<f64>,
    /// `token_logprobs` as an array literal.
    pub token_logprobs: Vec<String>,
    pub prompt: Vec<String>,
    pub observe_ms: Vec<i32>,
    pub policy_ms: Vec<i32>,
    pub act_ms: Vec<i32>,
}

/// Column arrays of `verdicts` rows.
#[derive(Default)]
pub(super) struct VerdictCols {
    pub episode_id: Vec<Uuid>,
    pub fact_id: Vec<String>,
    pub ord: Vec<i32>,
    pub passed: Vec<bool>,
    pub evidence: Vec<String>,
    pub reason: Vec<&'static str>,
}

/// One batch's rows.
#[derive(Default)]
pub(super) struct Batch {
    pub episodes: EpisodeCols,
    pub steps: StepCols,
    pub verdicts: VerdictCols,
}

/// Pre-rendered JSON shared by many rows.
pub(super) struct Shared {
    elements: Vec<&'static str>,
    policies: Vec<String>,
    blobs: Vec<String>,
}

const NO_EVENTS: &str = "[]";
const DIALOG: &str = r#"[{"kind":"dialog","dialog":"alert","message":"Your session will expire soon","accepted":true,"count":1}]"#;
const BLOCKED: &str = r#"[{"kind":"blocked","url":"http://ads.synthetic.test/track.js"}]"#;
const ACTION_ERRORS: &[&str] = &[
    "element 14 is not visible (scrolled out of view)",
    "no element numbered 31 on this page",
    "the page did not settle within 5 s",
];

fn elements_variant(v: usize) -> String {
    let tags = [
        ("a", "link"),
        ("button", "button"),
        ("input", "textbox"),
        ("select", "combobox"),
        ("a", "link"),
    ];
    let items: Vec<serde_json::Value> = (0..8 + v % 8)
        .map(|i| {
            let (tag, role) = tags[(i + v) % tags.len()];
            serde_json::json!({
                "id": i + 1,
                "tag": tag,
                "role": role,
                "label": format!("{role} {} of page variant {v}", i + 1),
                "disabled": false,
                "bbox": {"x": 20.0 + 40.0 * i as f64, "y": 80.0 + 32.0 * (i % 12) as f64,
                         "width": 160.0, "height": 28.0},
                "in_viewport": i < 12,
            })
        })
        .collect();
    serde_json::Value::Array(items).to_string()
}

impl Shared {
    /// `blobs`: the hashes steps refer to.
    pub fn new(blobs: Vec<String>) -> Shared {
        Shared {
            // Leaked once per run: a few KB shared by every step row.
            elements: (0..32)
                .map(|v| &*Box::leak(elements_variant(v).into_boxed_str()))
                .collect(),
            policies: super::plan::POLICIES
                .iter()
                .map(|p| {
                    serde_json::json!({
                        "name": p, "backend": "synthetic", "model": format!("{p}-v1"),
                        "fingerprint": format!("sha256:{:064x}", p.len()),
                        "sampling": {"temperature": 0.7, "top_p": 0.95, "max_tokens": 96},
                        "settings": {},
                    })
                    .to_string()
                })
                .collect(),
            blobs,
        }
    }
}

fn action(rng: &mut StdRng, last: bool, e: &PlannedEpisode) -> (String, Option<(f32, f32)>) {
    if last {
        match e.end_reason {
            Some("answered") | Some("env_done") => {
                let price = rng.random_range(5..500);
                return (format!("answer(\"€{price}\")"), None);
            }
            Some("stopped") => return ("stop()".into(), None),
            _ => {}
        }
    }
    match rng.random_range(0..10) {
        0..=4 => {
            let (x, y) = (
                rng.random_range(10.0..1270.0),
                rng.random_range(60.0..700.0),
            );
            (format!("click({})", rng.random_range(1..16)), Some((x, y)))
        }
        5..=6 => (
            format!(
                "type({}, \"item {}\")",
                rng.random_range(1..16),
                e.seed % 997
            ),
            None,
        ),
        7 => ("scroll(down)".into(), None),
        8 => ("press(\"Enter\")".into(), None),
        _ => ("go_back()".into(), None),
    }
}

fn ms(rng: &mut StdRng, median: f64, spread: f64) -> i32 {
    // Log-normal: most calls near the median, a long tail (as policy servers are).
    let z: f64 = (0..4).map(|_| rng.random_range(-1.0..1.0)).sum::<f64>() / 2.0;
    (median * (spread * z).exp()).round().clamp(1.0, 600_000.0) as i32
}

fn steps_of(
    b: &mut Batch,
    shared: &Shared,
    e: &PlannedEpisode,
    site: &str,
    rng: &mut StdRng,
) -> i64 {
    let mut total_ms = 0i64;
    let n = e.steps;
    for idx in 0..n {
        let last = idx + 1 == n;
        let url = format!(
            "http://{site}.synthetic.test/page-{}",
            (idx * 7 + e.rollout) % 40
        );
        let (act, click) = action(rng, last, e);
        let thought = format!(
            "Step {idx}: the list shows items around {}; the one I need is further on, so I {}.",
            e.seed % 997,
            if click.is_some() {
                "open it"
            } else {
                "keep going"
            }
        );
        let (o, p, a) = (
            ms(rng, 180.0, 0.5),
            ms(rng, 900.0, 0.7),
            ms(rng, 250.0, 0.6),
        );
        total_ms += i64::from(o + p + a);
        let lps: Vec<String> = (0..10)
            .map(|_| format!("{:.3}", -rng.random_range(0.0..2.0f32)))
            .collect();
        let s = &mut b.steps;
        s.episode_id.push(e.id);
        s.idx.push(idx);
        s.title
            .push(format!("{site} – page {}", (idx * 7 + e.rollout) % 40));
        s.screenshot
            .push(shared.blobs[(e.seed as usize + idx as usize) % shared.blobs.len()].clone());
        s.elements
            .push(shared.elements[(e.seed as usize + idx as usize) % shared.elements.len()]);
        s.events.push(match rng.random_range(0..100) {
            0 => DIALOG,
            1 => BLOCKED,
            _ => NO_EVENTS,
        });
        s.tabs.push(format!(
            r#"[{{"number":1,"url":"{url}","title":"{site}","active":true}}]"#
        ));
        s.raw_output.push(format!("{thought}\nAction: {act}"));
        s.thought.push(thought);
        s.prompt.push(format!(
            "<image>\nTask: find item {} on {site}.\nURL: {url}\nElements: [1] link … [15] button\nAnswer with one action.",
            e.seed % 997
        ));
        s.url.push(url);
        s.action.push(act);
        s.action_error
            .push((rng.random_range(0..100) < 3).then(|| ACTION_ERRORS[idx as usize % 3]));
        s.click_x.push(click.map(|c| c.0));
        s.click_y.push(click.map(|c| c.1));
        s.logprob.push(-rng.random_range(0.0..6.0));
        s.token_logprobs.push(format!("{{{}}}", lps.join(",")));
        s.observe_ms.push(o);
        s.policy_ms.push(p);
        s.act_ms.push(a);
    }
    total_ms
}

fn verdicts_of(b: &mut Batch, e: &PlannedEpisode, facts: usize) {
    let Some(score) = e.score else { return };
    let passing = (score * facts as f64).round() as usize;
    for i in 0..facts {
        let passed = e.success == Some(true) || i < passing;
        let v = &mut b.verdicts;
        v.episode_id.push(e.id);
        v.fact_id.push(format!("f{i}"));
        v.ord.push(i as i32);
        v.passed.push(passed);
        v.evidence.push(if passed {
            format!("visited http://synthetic.test/item-{i}")
        } else {
            String::new()
        });
        v.reason.push(if passed {
            "the URL was visited"
        } else {
            "no visited URL contains it"
        });
    }
}

/// The rows of `plan.episodes[range]`, from a seed of their own (batches are built in
/// parallel, each reproducible).
pub(super) fn batch(
    plan: &Plan,
    range: std::ops::Range<usize>,
    shared: &Shared,
    seed: u64,
) -> Batch {
    let mut rng = StdRng::seed_from_u64(seed ^ (range.start as u64).wrapping_mul(0x9E37_79B9));
    let mut b = Batch::default();
    for e in &plan.episodes[range] {
        let task = &plan.tasks[e.task];
        let campaign = &plan.campaigns[e.campaign];
        let step_ms = steps_of(&mut b, shared, e, task.site, &mut rng);
        verdicts_of(&mut b, e, task.facts);
        let finished = e.status == EpisodeStatus::Finished;
        let duration = finished.then(|| step_ms + rng.random_range(500..4000));
        let c = &mut b.episodes;
        c.id.push(e.id);
        c.campaign_id.push(campaign.id);
        c.task_id.push(task.id.clone());
        c.rollout.push(e.rollout);
        c.seed.push(e.seed);
        c.status.push(e.status);
        c.end_reason.push(e.end_reason);
        c.success.push(e.success);
        c.score.push(e.score);
        c.final_answer.push(
            (finished && e.end_reason == Some("answered"))
                .then(|| format!("€{}", rng.random_range(5..500))),
        );
        let final_url = format!(
            "http://{}.synthetic.test/page-{}",
            task.site,
            e.rollout % 40
        );
        c.visited.push(finished.then(|| {
            format!(
                "{{\"http://{}.synthetic.test/\",\"{final_url}\"}}",
                task.site
            )
        }));
        c.final_url.push(finished.then_some(final_url));
        c.final_screenshot
            .push(finished.then(|| shared.blobs[e.seed as usize % shared.blobs.len()].clone()));
        c.steps.push(e.steps);
        c.attempts.push(e.attempts);
        c.last_error.push(e.last_error.clone());
        c.started_at.push(e.started_at);
        c.finished_at.push(match (duration, e.started_at) {
            (Some(d), Some(s)) => Some(s + Duration::milliseconds(d)),
            _ => e.finished_at,
        });
        c.duration_ms
            .push(duration.map(|d| i32::try_from(d).unwrap_or(i32::MAX)));
        c.judge_error.push(e.judge_error.clone());
        c.policy
            .push(finished.then(|| shared.policies[e.campaign % shared.policies.len()].clone()));
    }
    b
}
