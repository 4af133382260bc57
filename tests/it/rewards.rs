//! Rewards measured on labels no judge made: the bundled suite's reference solutions, their
//! strict prefixes (the do-nothing agent first) and their declared perturbations, played
//! for real in Chromium, plus MiniWoB++ solver runs, plus the random policy's episodes
//! labelled by review. The labelled set must hold both
//! classes for every rule check kind, the calibration report must agree with the labels
//! judged one by one, the do-nothing agent must fail every bundled task, the bundled suite
//! must have no unaccepted audit finding, and a check that always holds must be found.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use browser_pool::{BrowserPool, PoolConfig};
use engine::audit::{self, Exploration, labels};
use engine::judge::calibration::{self, LabelledEpisode};
use futures::StreamExt;
use rubrics::Trajectory;
use tasks::Task;
use tasks::reviewed::Reviewed;

const CONCURRENCY: usize = 2;

async fn pool() -> BrowserPool {
    let mut cfg = PoolConfig::new(PoolConfig::default_chromium());
    cfg.contexts_per_browser = CONCURRENCY;
    BrowserPool::launch(cfg).await.unwrap()
}

async fn explore_all(pool: &BrowserPool, tasks: Vec<Arc<Task>>) -> Vec<Exploration> {
    futures::stream::iter(tasks)
        .map(|t| async move {
            let id = t.id.clone();
            audit::explore(pool, t, 1)
                .await
                .unwrap_or_else(|e| panic!("{id}: {e}"))
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await
}

/// The rule judge's verdict on one labelled fact, judged directly.
async fn verdict(item: &LabelledEpisode, fact: &str) -> Option<bool> {
    let task = item.task().unwrap();
    let traj = Trajectory {
        final_answer: item.final_answer.clone(),
        visited_urls: item.visited_urls.clone(),
    };
    // The fact in words (for model judges) has no rule verdict.
    let mut spec = task.rubric.spec().clone();
    for g in &mut spec.groups {
        g.facts.retain(|f| f.check.kind != "judge");
    }
    spec.groups.retain(|g| !g.facts.is_empty());
    let rubric = rubrics::Rubric::from_spec(spec).unwrap();
    let j = rubrics::judge(&rubric, &traj, &item.page).await.unwrap();
    j.verdicts
        .iter()
        .find(|v| v.fact_id == fact)
        .map(|v| v.passed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_labelled_set_holds_both_classes_and_measures_the_rule_judge() {
    let (sites, _) = common::miniwob_sites().await;
    let mut tasks: Vec<Arc<Task>> = tasks::bundled_tasks(sites.bases())
        .into_iter()
        .map(|l| Arc::new(l.line.result.unwrap()))
        .collect();
    let bundled = tasks.len();
    let base = &sites.bases()["miniwob"];
    for name in [
        "click-test",
        "click-button",
        "enter-text",
        "click-checkboxes",
    ] {
        tasks.push(Arc::new(tasks::miniwob_task(name, base).unwrap()));
    }
    let pool = pool().await;
    let explored = explore_all(&pool, tasks.clone()).await;

    // The do-nothing agent fails every bundled task, and no task has an open finding.
    let mut open = Vec::new();
    for ex in &explored {
        let nothing = audit::judge(&ex.task, &ex.prefixes[0]).await.unwrap();
        assert!(
            !nothing.success,
            "{}: the do-nothing agent succeeds",
            ex.task.id
        );
        for f in audit::findings(ex).await.unwrap() {
            if !f.accepted && !ex.task.id.as_str().starts_with("miniwob.") {
                open.push(format!("{}: {} {:?} {}", f.task, f.kind, f.fact, f.detail));
            }
        }
    }
    assert_eq!(explored.len(), bundled + 4);
    assert!(open.is_empty(), "open audit findings: {open:#?}");

    // The random policy's episodes, labelled by review, replay to the pages reviewed.
    let reviewed: Vec<(Arc<Task>, Reviewed)> = tasks::reviewed::bundled_reviewed()
        .into_iter()
        .map(|l| {
            let spec = l.spec.unwrap();
            let task = tasks.iter().find(|t| t.id.as_str() == spec.task).unwrap();
            (task.clone(), spec.check(task).unwrap())
        })
        .collect();
    assert_eq!(
        reviewed.len(),
        bundled,
        "one reviewed episode per bundled task"
    );
    let bases = sites.bases();
    let replayed: Vec<LabelledEpisode> = futures::stream::iter(&reviewed)
        .map(|(t, r)| async {
            let end = audit::reviewed::replay_reviewed(&pool, t, r, bases)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            labels::reviewed(t, r, &end)
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    let labels_of = |v: bool| {
        replayed
            .iter()
            .flat_map(|e| e.gold.iter().filter(|(f, _)| *f != labels::ANSWER_FACT))
            .filter(|(_, l)| **l == v)
            .count()
    };
    assert!(labels_of(true) >= 1 && labels_of(false) >= 150);
    // A replay that visits other pages than the reviewed ones is refused.
    let (t, r) = &reviewed[0];
    let mut moved = r.clone();
    moved.spec.visited.push("{{shop}}/elsewhere.html".into());
    let diverged = audit::reviewed::replay_reviewed(&pool, t, &moved, bases).await;
    assert!(
        matches!(
            diverged,
            Err(audit::reviewed::ReviewedError::Diverged { .. })
        ),
        "{diverged:?}"
    );

    let items: Vec<LabelledEpisode> = explored
        .iter()
        .flat_map(labels::labelled)
        .chain(replayed)
        .collect();
    let report = calibration::evaluate(&items, None, 1).await.unwrap();
    for kind in ["url", "page_text", "element", "answer", "js", "miniwob"] {
        let c = report.confusion.get(kind).copied().unwrap_or_default();
        assert!(
            c.positives() >= 4 && c.negatives() >= 4,
            "{kind}: {} true and {} false labels",
            c.positives(),
            c.negatives()
        );
    }
    // The report's figures are the labels judged one by one.
    let (mut right, mut all) = (0usize, 0usize);
    let mut by_kind: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut disagreed = Vec::new();
    for item in &items {
        let task = item.task().unwrap();
        for (fact, gold) in &item.gold {
            let Some(got) = verdict(item, fact).await else {
                continue;
            };
            let kind = task
                .rubric
                .groups()
                .iter()
                .flat_map(|g| &g.facts)
                .find(|f| &f.id == fact)
                .unwrap()
                .check
                .kind();
            all += 1;
            right += usize::from(got == *gold);
            // The bundled claim: the rule checks agree with every reviewed label.
            if item.label.contains("/random-seed-") && got != *gold {
                disagreed.push(format!("{} {fact}: rule {got}, review {gold}", item.label));
            }
            let e = by_kind.entry(kind.to_string()).or_default();
            e.0 += 1;
            e.1 += usize::from(got == *gold);
        }
    }
    assert_eq!(report.facts, all);
    assert!((report.accuracy - right as f64 / all as f64).abs() < 1e-9);
    assert_eq!(report.by_kind, by_kind);
    assert_eq!(report.mistakes.len(), all - right, "{:#?}", report.mistakes);
    assert!(disagreed.is_empty(), "{disagreed:#?}");
    pool.shutdown().await;
}

/// A rubric that also holds on the start page is found: the do-nothing agent succeeds,
/// strict prefixes succeed, and the always-true fact is never false.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_always_true_check_is_found_by_the_audit() {
    let sites = common::sites().await;
    let mut spec = tasks::bundled_tasks(sites.bases())
        .into_iter()
        .map(|l| l.line.result.unwrap())
        .find(|t| t.id.as_str() == "shop-mug-capacity")
        .unwrap()
        .to_spec();
    spec.audit = None;
    // Beside the real facts, in a group of its own: only the never-false finding.
    let mut with_extra = spec.clone();
    let rubric = with_extra.rubric.as_mut().unwrap();
    rubric["groups"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "id": "extra", "facts": [{"id": "always", "check": {"type": "url", "regex": "^http"}}]
        }));
    // As the whole rubric: lenient too.
    let mut only = spec.clone();
    only.rubric = Some(serde_json::json!({"groups": [{"id": "g", "facts": [
        {"id": "always", "check": {"type": "page_text", "contains": "Northwind"}}
    ]}]}));
    only.reference_solution.pop();
    only.reference_solution.push("stop()".into());
    only.reference_answer = None;
    let pool = pool().await;
    let mut kinds = Vec::new();
    for spec in [with_extra, only] {
        let task = Arc::new(Task::try_from(spec).unwrap());
        let ex = audit::explore(&pool, task, 1).await.unwrap();
        let found = audit::findings(&ex).await.unwrap();
        assert!(found.iter().all(|f| !f.accepted));
        kinds.push(
            found
                .iter()
                .map(|f| {
                    format!(
                        "{}{}",
                        f.kind,
                        f.fact
                            .as_deref()
                            .map(|x| format!(" {x}"))
                            .unwrap_or_default()
                    )
                })
                .collect::<Vec<_>>(),
        );
    }
    pool.shutdown().await;
    assert_eq!(kinds[0], vec!["never-false always"]);
    assert_eq!(
        kinds[1],
        vec![
            "do-nothing-succeeds",
            "lenient-prefix",
            "never-false always"
        ]
    );
}
