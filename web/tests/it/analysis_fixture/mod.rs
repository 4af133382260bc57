//! Two campaigns with known outcomes for the analysis tests, stored as runners store
//! episodes (claimed, then finished under the lease), and tasks whose strings are hostile.

use std::time::Duration;

use serde_json::{Value, json};
use store::{EndReason, EpisodeRecord, PlannedEpisode, StepCore, StepRecord, Store};
use uuid::Uuid;

/// What a task's instruction says in the hostile fixture.
pub const HOSTILE_INSTRUCTION: &str = r#"<img src=x onerror="window.__xss=1">Find <b>it</b>"#;
/// A final answer with markup.
pub const HOSTILE_ANSWER: &str = "<script>window.__xss=2</script>needle";
/// A thought with markup.
pub const HOSTILE_THOUGHT: &str = "<img src=y onerror=window.__xss=3>thinking";

/// One rollout's outcome.
#[derive(Clone, Copy)]
struct Outcome {
    success: bool,
    steps: usize,
    reason: EndReason,
    answer: &'static str,
}

const fn ok(steps: usize, answer: &'static str) -> Outcome {
    Outcome {
        success: true,
        steps,
        reason: EndReason::Answered,
        answer,
    }
}

const fn fail(steps: usize, reason: EndReason) -> Outcome {
    Outcome {
        success: false,
        steps,
        reason,
        answer: "",
    }
}

/// Tasks: (id, site, difficulty, split, tags, instruction).
fn tasks() -> Vec<Value> {
    let t =
        |id: &str, site: &str, difficulty: &str, split: &str, tags: &[&str], instruction: &str| {
            json!({
                "id": id, "site": site, "difficulty": difficulty, "split": split, "tags": tags,
                "instruction": instruction, "start_url": "http://127.0.0.1:8701/",
                "rubric": {"groups": [{"facts": [{"check": {"type": "answer", "number": 12.5}}]}]}
            })
        };
    vec![
        t(
            "easy-a",
            "shop",
            "easy",
            "train",
            &["alpha"],
            HOSTILE_INSTRUCTION,
        ),
        t(
            "med-b",
            "shop",
            "medium",
            "test",
            &["alpha", "beta"],
            "Find the mug",
        ),
        t(
            "hard-c",
            "blog",
            "hard",
            "train",
            &["beta"],
            "Find the post",
        ),
    ]
}

/// Campaign A: easy-a 3 of 4, med-b 1 of 4, hard-c 0 of 4.
fn outcomes_a(task: &str, rollout: i32) -> Outcome {
    use EndReason::{MaxSteps, Stopped};
    match (task, rollout) {
        ("easy-a", 0) => ok(2, HOSTILE_ANSWER),
        ("easy-a", 1) => ok(2, "12.50 NEEDLE"),
        ("easy-a", 2) => ok(3, "12.50"),
        ("easy-a", 3) => fail(4, Stopped),
        ("med-b", 0) => ok(5, "100% sure"),
        ("med-b", _) => fail(6, MaxSteps),
        _ => fail(6, MaxSteps),
    }
}

/// Campaign B: easy-a 0 of 4, med-b 1 of 4, hard-c 2 of 4.
fn outcomes_b(task: &str, rollout: i32) -> Outcome {
    use EndReason::{MaxSteps, Stopped};
    match (task, rollout) {
        ("easy-a", _) => fail(3, Stopped),
        ("med-b", 0) => ok(4, "12.50"),
        ("med-b", _) => fail(6, MaxSteps),
        ("hard-c", 0 | 1) => ok(5, "found"),
        _ => fail(6, MaxSteps),
    }
}

fn record(id: Uuid, o: Outcome) -> EpisodeRecord {
    let step = |i: usize| StepRecord {
        core: StepCore {
            url: format!("http://127.0.0.1:8701/page{i}"),
            title: "Shop".into(),
            screenshot: None,
            elements: json!([]),
            events: json!([]),
            tabs: json!([]),
            ax_tree: None,
            action: if i + 1 == o.steps {
                format!("answer({:?})", o.answer)
            } else {
                format!("click({i})")
            },
            thought: Some(HOSTILE_THOUGHT.into()),
            raw_output: None,
            action_error: None,
            logprob: None,
            prompt: None,
            observe_ms: 30,
            policy_ms: 120,
            act_ms: 600,
        },
        click: None,
        token_logprobs: vec![],
        token_ids: vec![],
    };
    EpisodeRecord {
        id,
        end_reason: o.reason,
        instruction: None,
        final_answer: (!o.answer.is_empty()).then(|| o.answer.to_string()),
        final_url: Some("http://127.0.0.1:8701/done".into()),
        final_screenshot: None,
        final_page: None,
        steps: (0..o.steps).map(step).collect(),
        verdicts: vec![],
        blobs: vec![],
        success: o.success,
        credit: rubrics::Credit::Exact(if o.success { 1.0 } else { 0.25 }),
        duration: Duration::from_millis(1000 * o.steps as u64),
        judge_time: Some(Duration::from_millis(15)),
        politeness_wait: None,
        recorded: None,
        unmatched_requests: None,
        judge_calls: 0,
        judge_facts: 0,
        judge_exhaustive_calls: 0,
        screen: None,
        policy: None,
        visited_urls: vec![],
        judge_error: None,
    }
}

/// A campaign of 4 rollouts per task whose episodes end as `outcome` says.
async fn campaign(store: &Store, name: &str, outcome: fn(&str, i32) -> Outcome) -> Uuid {
    let id = Uuid::new_v4();
    let mut planned = Vec::new();
    for t in ["easy-a", "med-b", "hard-c"] {
        for rollout in 0..4 {
            planned.push(PlannedEpisode {
                task_id: t.into(),
                rollout,
                seed: i64::from(rollout),
            });
        }
    }
    store
        .create_campaign(
            id,
            name,
            "<u>scripted</u>",
            &json!({"rollouts_per_task": 4}),
            &planned,
        )
        .await
        .unwrap();
    while let Some(e) = store
        .claim_episode(id, "test", Duration::from_secs(60))
        .await
        .unwrap()
    {
        let rec = record(e.id, outcome(&e.task_id, e.rollout));
        assert!(store.finish_episode("test", &rec).await.unwrap());
    }
    id
}

/// Tasks and two campaigns (A, B) with known outcomes.
pub async fn fixture(store: &Store) -> (Uuid, Uuid) {
    for t in tasks() {
        store
            .insert_task(&tasks::parse_task(&t.to_string()).unwrap())
            .await
            .unwrap();
    }
    let a = campaign(store, "<i>campaign A</i>", outcomes_a).await;
    let b = campaign(store, "campaign B", outcomes_b).await;
    (a, b)
}
