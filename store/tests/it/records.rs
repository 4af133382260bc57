//! Leases make episodes exactly-once: a runner that lost its lease stores nothing, an
//! expired lease is reclaimed, failures go back for a retry with their reason.

use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use sqlx::PgPool;
use store::export::ExportFilter;
use store::{
    AX_TREE_LIMIT, Blob, EndReason, EpisodeRecord, PlannedEpisode, StepCore, StepRecord, Store,
    VerdictOutcome, VerdictRecord, blob_hash,
};
use uuid::Uuid;

async fn setup(pool: PgPool, tasks_n: usize) -> (Store, Uuid) {
    let store = Store::from_pool(pool);
    let mut planned = Vec::new();
    for i in 0..tasks_n {
        let line = json!({
            "id": format!("t{i}"), "instruction": "x", "start_url": "http://127.0.0.1:1/",
            "rubric": {"groups": [{"facts": [{"check": {"type": "url", "prefix": "http"}}]}]}
        });
        store
            .insert_task(&tasks::parse_task(&line.to_string()).unwrap())
            .await
            .unwrap();
        planned.push(PlannedEpisode {
            task_id: format!("t{i}"),
            rollout: 0,
            seed: i as i64,
        });
    }
    let id = Uuid::new_v4();
    store
        .create_campaign(id, "c", "scripted", &json!({}), &planned)
        .await
        .unwrap();
    (store, id)
}

fn record(id: Uuid, steps: usize) -> EpisodeRecord {
    let shot = format!("screenshot of {id}").into_bytes();
    let hash = blob_hash(&shot);
    let step = StepRecord {
        core: StepCore {
            url: "http://x/".into(),
            title: "t".into(),
            screenshot: Some(hash.clone()),
            elements: json!([]),
            events: json!([{"kind": "download", "url": "http://x/f.zip", "filename": "f.zip"}]),
            tabs: json!([{"number": 1, "url": "http://x/", "title": "t", "active": true}]),
            ax_tree: None,
            action: "click(1)".into(),
            thought: None,
            raw_output: None,
            action_error: None,
            logprob: Some(-0.5),
            prompt: Some("Task: x\nElements: [1] link".into()),
            observe_ms: 1,
            policy_ms: 2,
            act_ms: 3,
        },
        click: Some((1.0, 2.0)),
        token_logprobs: vec![-0.25, -0.25],
        token_ids: vec![7, 40_000],
    };
    EpisodeRecord {
        id,
        instruction: None,
        end_reason: EndReason::Stopped,
        final_answer: None,
        final_url: Some("http://x/".into()),
        final_screenshot: None,
        final_page: None,
        steps: vec![step; steps],
        verdicts: vec![VerdictRecord {
            judge: "rules".into(),
            group_id: "g1".into(),
            fact_id: "g1.f1".into(),
            outcome: VerdictOutcome::Checked {
                passed: true,
                evidence: "e".into(),
                reason: "r".into(),
            },
        }],
        blobs: vec![Blob {
            hash,
            mime: "image/jpeg".into(),
            bytes: shot,
        }],
        success: true,
        credit: rubrics::Credit::Exact(1.0),
        duration: Duration::from_millis(5),
        judge_time: Some(Duration::from_millis(2)),
        politeness_wait: Some(Duration::from_millis(7)),
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

async fn blob_count(store: &Store) -> i64 {
    sqlx::query_as::<_, (i64,)>("SELECT count(*) FROM blobs")
        .fetch_one(store.pool())
        .await
        .unwrap()
        .0
}

const LEASE: Duration = Duration::from_secs(60);

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn only_the_lease_holder_stores_an_episode_and_only_once(pool: PgPool) {
    let (store, c) = setup(pool, 2).await;
    let a = store.claim_episode(c, "A", LEASE).await.unwrap().unwrap();
    let b = store.claim_episode(c, "B", LEASE).await.unwrap().unwrap();
    assert_ne!(a.id, b.id, "SKIP LOCKED hands out distinct episodes");
    assert!(
        store.claim_episode(c, "C", LEASE).await.unwrap().is_none(),
        "nothing left"
    );
    assert_eq!(a.attempts, 1);

    assert!(
        !store.finish_episode("B", &record(a.id, 3)).await.unwrap(),
        "B does not hold A's lease"
    );
    assert_eq!(
        blob_count(&store).await,
        0,
        "a fenced-off write leaves no blobs behind"
    );
    assert!(store.finish_episode("A", &record(a.id, 3)).await.unwrap());
    assert_eq!(
        blob_count(&store).await,
        1,
        "screenshots are stored with their episode, once"
    );
    assert!(
        !store.finish_episode("A", &record(a.id, 3)).await.unwrap(),
        "a finished episode is never stored twice"
    );
    let (episodes, steps, _, verdicts) = store.campaign_row_counts(c).await.unwrap();
    assert_eq!((episodes, steps, verdicts), (2, 3, 1));
    let detail = store.get_episode(a.id).await.unwrap().unwrap();
    assert_eq!(detail.summary.status, store::EpisodeStatus::Finished);
    assert_eq!(detail.summary.politeness_ms, Some(7), "the politeness wait");
    assert_eq!(detail.steps.len(), 3);
    assert_eq!(detail.steps[2].idx, 2);
    assert_eq!(detail.steps[0].core.logprob, Some(-0.5));
    assert_eq!(detail.steps[0].core.events[0]["filename"], "f.zip");
    assert_eq!(detail.steps[0].core.tabs[0]["active"], true);
    assert_eq!(
        store.finished_by(c).await.unwrap(),
        vec![("A".to_string(), 1)],
        "the runner that stored it"
    );

    // An infrastructure failure goes back to pending with its reason, then to a retry.
    assert!(
        store
            .release_episode(b.id, "B", "browser: gone", false)
            .await
            .unwrap()
    );
    let again = store.claim_episode(c, "C", LEASE).await.unwrap().unwrap();
    assert_eq!(
        (again.id, again.attempts, again.last_error.as_deref()),
        (b.id, 2, Some("browser: gone"))
    );
    assert!(
        store
            .release_episode(b.id, "C", "browser: gone again", true)
            .await
            .unwrap()
    );
    let view = store.get_campaign(c).await.unwrap().unwrap();
    assert_eq!(
        (
            view.counts.finished,
            view.counts.failed,
            view.counts.pending
        ),
        (1, 1, 0)
    );
    assert_eq!(
        view.success_rate,
        Some(1.0),
        "infrastructure failures are not scored"
    );
    assert_eq!(view.progress, 1.0);
}

/// An episode whose rubric could not be evaluated (a selector the browser rejected) is
/// stored finished but unscored, with the reason: it counts neither as a success nor as a
/// failure of the agent.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_rubric_error_is_stored_unscored_not_as_a_failure(pool: PgPool) {
    let (store, c) = setup(pool, 2).await;
    let a = store.claim_episode(c, "A", LEASE).await.unwrap().unwrap();
    let b = store.claim_episode(c, "A", LEASE).await.unwrap().unwrap();
    let mut failed = record(a.id, 1);
    failed.success = false;
    failed.credit = rubrics::Credit::Exact(0.0);
    assert!(store.finish_episode("A", &failed).await.unwrap());
    let mut broken = record(b.id, 1);
    broken.success = false;
    broken.credit = rubrics::Credit::Exact(0.0);
    broken.judge_error =
        Some("rubric: fact `g1.f1`: the browser rejected the selector `a:-webkit-x`".into());
    assert!(store.finish_episode("A", &broken).await.unwrap());

    let detail = store.get_episode(b.id).await.unwrap().unwrap();
    assert_eq!(detail.summary.status, store::EpisodeStatus::Finished);
    assert_eq!((detail.summary.success, detail.summary.score), (None, None));
    assert!(
        detail
            .summary
            .judge_error
            .as_deref()
            .is_some_and(|e| e.contains("rejected the selector")),
        "{:?}",
        detail.summary.judge_error
    );
    let other = store.get_episode(a.id).await.unwrap().unwrap();
    assert_eq!(
        (other.summary.success, other.summary.judge_error),
        (Some(false), None)
    );

    let view = store.get_campaign(c).await.unwrap().unwrap();
    assert_eq!((view.counts.finished, view.judge_errors), (2, 1));
    assert_eq!(
        view.success_rate,
        Some(0.0),
        "the rate is over the one episode judged, not both"
    );
    assert_eq!(view.mean_score, Some(0.0));
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn an_expired_lease_is_reclaimed_and_the_old_holder_is_fenced_off(pool: PgPool) {
    let (store, c) = setup(pool, 1).await;
    // Long enough that the claims and heartbeat below fall inside it on a busy machine.
    let short = Duration::from_secs(3);
    let dead = store
        .claim_episode(c, "dead-runner", short)
        .await
        .unwrap()
        .unwrap();
    assert!(
        store.claim_episode(c, "B", LEASE).await.unwrap().is_none(),
        "held until it expires"
    );
    assert!(
        store
            .heartbeat(dead.id, "dead-runner", short)
            .await
            .unwrap(),
        "heartbeats extend a held lease"
    );
    tokio::time::sleep(short + Duration::from_millis(500)).await;
    let b = store
        .claim_episode(c, "B", LEASE)
        .await
        .unwrap()
        .expect("expired lease reclaimed");
    assert_eq!((b.id, b.attempts), (dead.id, 2));
    assert!(
        !store
            .heartbeat(dead.id, "dead-runner", short)
            .await
            .unwrap()
    );
    assert!(
        !store
            .finish_episode("dead-runner", &record(dead.id, 1))
            .await
            .unwrap()
    );
    assert!(store.finish_episode("B", &record(b.id, 2)).await.unwrap());
    let (_, steps, _, _) = store.campaign_row_counts(c).await.unwrap();
    assert_eq!(steps, 2, "only the live runner's steps");
}

/// Cancelling ends what will not run: pending episodes, running ones whose runner died,
/// and (when its runner gives it back) one still running, instead of leaving them pending.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_cancelled_campaign_leaves_no_episode_pending(pool: PgPool) {
    let (store, c) = setup(pool, 4).await;
    let live = store.claim_episode(c, "A", LEASE).await.unwrap().unwrap();
    let dead = store
        .claim_episode(c, "dead-runner", Duration::from_millis(1))
        .await
        .unwrap()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    store
        .set_campaign_status(c, store::Status::Cancelled, None)
        .await
        .unwrap();
    assert_eq!(store.cancel_unrun(c).await.unwrap(), 3, "2 pending, 1 dead");
    let counts = store.get_campaign(c).await.unwrap().unwrap().counts;
    assert_eq!(
        (counts.pending, counts.running, counts.cancelled),
        (0, 1, 3)
    );
    assert!(
        store.claim_episode(c, "B", LEASE).await.unwrap().is_none(),
        "nothing left to run"
    );
    assert!(
        store
            .release_episode(live.id, "A", "browser: gone", false)
            .await
            .unwrap()
    );
    let counts = store.get_campaign(c).await.unwrap().unwrap().counts;
    assert_eq!(
        (counts.pending, counts.running, counts.cancelled),
        (0, 0, 4),
        "a retry of a cancelled campaign's episode is not queued"
    );
    assert!(
        !store
            .finish_episode("dead-runner", &record(dead.id, 1))
            .await
            .unwrap()
    );
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn blobs_are_content_addressed(pool: PgPool) {
    let store = Store::from_pool(pool);
    let h1 = store.put_blob(b"jpeg bytes", "image/jpeg").await.unwrap();
    let h2 = store.put_blob(b"jpeg bytes", "image/jpeg").await.unwrap();
    assert_eq!(h1, h2);
    assert_eq!(h1.len(), 64);
    let (mime, bytes) = store.get_blob(&h1).await.unwrap().unwrap();
    assert_eq!(
        (mime.as_str(), bytes.as_slice()),
        ("image/jpeg", &b"jpeg bytes"[..])
    );
    let (n,): (i64,) = sqlx::query_as("SELECT count(*) FROM blobs")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(n, 1);
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn nul_characters_from_pages_and_models_are_stored_not_fatal(pool: PgPool) {
    let (store, c) = setup(pool, 1).await;
    let a = store.claim_episode(c, "A", LEASE).await.unwrap().unwrap();
    let mut rec = record(a.id, 2);
    rec.steps[0].core.raw_output = Some("Action: click(\0 3)".into());
    rec.steps[1].core.title = "Tab\0Title".into();
    rec.steps[1].core.elements = json!([{"label": "a\0b"}]);
    rec.steps[1].core.tabs = json!([{"title": "t\0"}]);
    rec.steps[1].core.events = json!([{"kind": "dialog", "message": "m\0"}]);
    rec.steps[1].core.prompt = Some("[1] a\0b".into());
    rec.steps[1].core.ax_tree = Some("[1] button \"a\0b\"".into());
    rec.final_answer = Some("x\0".into());
    assert!(store.finish_episode("A", &rec).await.unwrap());
    let d = store.get_episode(a.id).await.unwrap().unwrap();
    assert_eq!(
        d.steps[0].core.raw_output.as_deref(),
        Some("Action: click(\u{FFFD} 3)")
    );
    assert_eq!(d.steps[1].core.title, "Tab\u{FFFD}Title");
    assert_eq!(d.steps[1].core.elements, json!([{"label": "a\u{FFFD}b"}]));
    assert_eq!(d.steps[1].core.tabs, json!([{"title": "t\u{FFFD}"}]));
    assert_eq!(d.steps[1].core.events[0]["message"], "m\u{FFFD}");
    assert_eq!(d.steps[1].core.prompt.as_deref(), Some("[1] a\u{FFFD}b"));
    assert_eq!(
        d.steps[1].core.ax_tree.as_deref(),
        Some("[1] button \"a\u{FFFD}b\"")
    );
    assert_eq!(d.summary.final_answer.as_deref(), Some("x\u{FFFD}"));
    assert_eq!(
        blob_count(&store).await,
        1,
        "screenshots stored with the cleaned record"
    );
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_step_keeps_its_accessibility_tree_bounded_in_size(pool: PgPool) {
    let (store, c) = setup(pool, 1).await;
    let a = store.claim_episode(c, "A", LEASE).await.unwrap().unwrap();
    let mut rec = record(a.id, 3);
    rec.steps[0].core.ax_tree = Some("[3] button \"Buy\"".into());
    // A hostile page's tree: far past the bound, multi-byte characters across it.
    rec.steps[1].core.ax_tree = Some(format!("[1] link \"{}\"", "é".repeat(AX_TREE_LIMIT)));
    assert!(store.finish_episode("A", &rec).await.unwrap());
    let d = store.get_episode(a.id).await.unwrap().unwrap();
    assert_eq!(
        d.steps[0].core.ax_tree.as_deref(),
        Some("[3] button \"Buy\"")
    );
    let big = d.steps[1].core.ax_tree.as_deref().unwrap();
    assert!(big.starts_with("[1] link \"éé"));
    assert!(big.len() < AX_TREE_LIMIT + 100, "{}", big.len());
    assert!(
        big.ends_with(&format!("of {} bytes stored]", AX_TREE_LIMIT * 2 + 11)),
        "{}",
        &big[big.len() - 80..]
    );
    assert_eq!(d.steps[2].core.ax_tree, None, "not recorded: null");
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn facts_left_unchecked_are_stored_as_such_with_a_lower_bound_credit(pool: PgPool) {
    let (store, c) = setup(pool, 1).await;
    let a = store.claim_episode(c, "A", LEASE).await.unwrap().unwrap();
    let mut rec = record(a.id, 1);
    rec.success = false;
    rec.verdicts.push(VerdictRecord {
        judge: "model:x".into(),
        group_id: "g2".into(),
        fact_id: "g2.f1".into(),
        outcome: VerdictOutcome::Checked {
            passed: false,
            evidence: "NO".into(),
            reason: "not shown".into(),
        },
    });
    rec.verdicts.push(VerdictRecord {
        judge: "model:x".into(),
        group_id: "g2".into(),
        fact_id: "g2.f2".into(),
        outcome: VerdictOutcome::Skipped,
    });
    rec.credit = rubrics::Credit::LowerBound {
        at_least: 1.0 / 3.0,
        of_verified: 0.5,
    };
    (rec.judge_calls, rec.judge_facts, rec.judge_exhaustive_calls) = (1, 2, 3);
    assert!(store.finish_episode("A", &rec).await.unwrap());

    let d = store.get_episode(a.id).await.unwrap().unwrap();
    let got: Vec<_> = d
        .verdicts
        .iter()
        .map(|v| (v.fact_id.as_str(), v.passed, v.evidence.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("g1.f1", Some(true), "e"),
            ("g2.f1", Some(false), "NO"),
            ("g2.f2", None, "")
        ],
        "stored in rubric order, the unchecked fact without an outcome"
    );
    assert_eq!(d.summary.score, Some(1.0 / 3.0), "the lower bound");
    assert_eq!(d.summary.score_of_verified, Some(0.5));
    let v = store.get_campaign(c).await.unwrap().unwrap();
    assert_eq!(
        (
            v.judge_calls,
            v.judge_facts,
            v.judge_exhaustive_calls,
            v.judge_calls_saved
        ),
        (1, 2, 3, 2)
    );
    assert_eq!(
        store.judge_ms(&[c]).await.unwrap(),
        2,
        "the judge's time is kept"
    );
    // The schema refuses an unchecked fact that claims evidence.
    let err = sqlx::query(
        "INSERT INTO verdicts (episode_id, judge, group_id, fact_id, ord, passed, evidence, reason)
         VALUES ($1, 'model:x', 'g', 'f', 9, NULL, 'seen', '')",
    )
    .bind(a.id)
    .execute(store.pool())
    .await
    .unwrap_err();
    assert!(
        err.to_string().contains("verdicts_unchecked_is_bare"),
        "{err}"
    );
}

/// Everything the export yields: (task, rollout) of each episode, in order.
async fn exported(store: &Store, filter: ExportFilter, page: i64) -> Vec<(String, Option<bool>)> {
    store::export::episodes_in_pages(store.clone(), filter, page)
        .map(|e| {
            let e = e.unwrap();
            (e.summary.task_id, e.summary.success)
        })
        .collect()
        .await
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn the_export_yields_each_finished_episode_once_with_its_token_logprobs(pool: PgPool) {
    let (store, c) = setup(pool, 5).await;
    sqlx::query("UPDATE tasks SET split = 'test' WHERE id IN ('t3', 't4')")
        .execute(store.pool())
        .await
        .unwrap();
    // Claimed in an order of the store's choosing; finish all but two: one left pending,
    // one failed on infrastructure.
    let mut claimed = Vec::new();
    while let Some(e) = store.claim_episode(c, "A", LEASE).await.unwrap() {
        claimed.push(e.id);
    }
    assert_eq!(claimed.len(), 5);
    let task_of = |id: Uuid| {
        let store = store.clone();
        async move {
            store
                .get_episode(id)
                .await
                .unwrap()
                .unwrap()
                .summary
                .task_id
        }
    };
    let mut by_task = std::collections::BTreeMap::new();
    for id in &claimed {
        by_task.insert(task_of(*id).await, *id);
    }
    for t in ["t0", "t2", "t3"] {
        let mut r = record(by_task[t], 2);
        r.success = t != "t2";
        assert!(store.finish_episode("A", &r).await.unwrap());
    }
    assert!(
        store
            .release_episode(by_task["t1"], "A", "browser crashed", true)
            .await
            .unwrap()
    );

    let all = ExportFilter {
        campaign: Some(c),
        ..Default::default()
    };
    let want = vec![
        ("t0".to_string(), Some(true)),
        ("t2".to_string(), Some(false)),
        ("t3".to_string(), Some(true)),
    ];
    assert_eq!(
        exported(&store, all.clone(), 100).await,
        want,
        "finished ones only, in campaign order"
    );
    assert_eq!(
        exported(&store, all.clone(), 1).await,
        want,
        "the same when read a key at a time"
    );
    assert_eq!(store::export::count(&store, &all).await.unwrap(), 3);
    let test_split = ExportFilter {
        campaign: Some(c),
        split: Some("test".into()),
        ..Default::default()
    };
    assert_eq!(
        exported(&store, test_split, 100).await,
        vec![("t3".to_string(), Some(true))]
    );
    let failures = ExportFilter {
        campaign: Some(c),
        success: Some(false),
        ..Default::default()
    };
    assert_eq!(
        exported(&store, failures, 100).await,
        vec![("t2".to_string(), Some(false))]
    );

    // Pages read while the campaign goes on: an episode finishing ahead of the reader is
    // picked up, and none is read twice.
    let mut stream = std::pin::pin!(store::export::episodes_in_pages(
        store.clone(),
        all.clone(),
        1
    ));
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!(first.summary.task_id, "t0");
    assert_eq!(first.summary.split, "train");
    assert_eq!(first.steps.len(), 2);
    assert_eq!(first.steps[0].token_logprobs, Some(vec![-0.25, -0.25]));
    assert_eq!(first.steps[0].token_ids, Some(vec![7, 40_000]));
    assert_eq!(
        first.steps[0].core.prompt.as_deref(),
        Some("Task: x\nElements: [1] link")
    );
    assert!(
        store
            .finish_episode("A", &record(by_task["t4"], 1))
            .await
            .unwrap()
    );
    let rest: Vec<String> = stream.map(|e| e.unwrap().summary.task_id).collect().await;
    assert_eq!(rest, ["t2", "t3", "t4"]);
}

/// The policies a campaign's finished episodes ran under, grouped by card, most used first;
/// unfinished episodes do not count.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_campaign_lists_the_policies_its_episodes_ran_under(pool: PgPool) {
    let (store, c) = setup(pool, 4).await;
    let mut claimed = Vec::new();
    while let Some(e) = store.claim_episode(c, "A", LEASE).await.unwrap() {
        claimed.push(e.id);
    }
    assert!(store.campaign_policies(c).await.unwrap().is_empty());
    let card = |fingerprint: &str| {
        let mut card = store::PolicyCard::new("onnx", "onnx");
        card.model = Some("smolvlm".into());
        card.fingerprint = Some(fingerprint.into());
        card
    };
    // Two workers resolved `onnx` to two checkpoints; the fourth episode is still running.
    for (id, fp) in claimed.iter().zip(["sha256:aa", "sha256:bb", "sha256:aa"]) {
        let mut r = record(*id, 1);
        r.policy = Some(card(fp));
        assert!(store.finish_episode("A", &r).await.unwrap());
    }
    let uses: Vec<(Option<String>, i64)> = store
        .campaign_policies(c)
        .await
        .unwrap()
        .into_iter()
        .map(|u| (u.card.fingerprint, u.episodes))
        .collect();
    assert_eq!(
        uses,
        [(Some("sha256:aa".into()), 2), (Some("sha256:bb".into()), 1)]
    );
    let detail = store.get_episode(claimed[1]).await.unwrap().unwrap();
    assert_eq!(detail.policy, Some(card("sha256:bb")));
}

/// Judging a stored episode again reads the pages it visited as the live judge did (every
/// page its tabs loaded, kept with it), or, for episodes stored before that was kept, the
/// pages its observations showed.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn judging_again_reads_the_pages_the_episode_visited(pool: PgPool) {
    let (store, c) = setup(pool, 1).await;
    let e = store.claim_episode(c, "A", LEASE).await.unwrap().unwrap();
    let mut r = record(e.id, 2);
    r.final_page = Some(json!({"url": "http://x/", "text": "done"}));
    r.visited_urls = vec![
        "http://x/".into(),
        "http://x/hop".into(),
        "http://x/end".into(),
    ];
    assert!(store.finish_episode("A", &r).await.unwrap());
    let (page, _, visited) = store.judged_material(e.id).await.unwrap().unwrap();
    assert_eq!(page["text"], "done");
    assert_eq!(visited, r.visited_urls);
    sqlx::query("UPDATE episodes SET visited_urls = NULL")
        .execute(store.pool())
        .await
        .unwrap();
    let (_, _, visited) = store.judged_material(e.id).await.unwrap().unwrap();
    assert_eq!(visited, ["http://x/", "http://x/"], "the steps' URLs");
}

/// The store's connections run without Postgres' JIT: compiling a big campaign's
/// aggregates took seconds where running them took well under one.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn the_store_connects_without_jit(pool: PgPool) {
    let db: String = sqlx::query_scalar("SELECT current_database()")
        .fetch_one(&pool)
        .await
        .unwrap();
    let base = std::env::var("DATABASE_URL").unwrap();
    let url = format!("{}/{db}", &base[..base.rfind('/').unwrap()]);
    let store = Store::connect(&url).await.unwrap();
    let jit: String = sqlx::query_scalar("SHOW jit")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(jit, "off");
    let jit: String = sqlx::query_scalar("SHOW jit")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(jit, "on", "the server's default, which the store overrides");
}
