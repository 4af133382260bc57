//! The synthetic history (`surfgym bench history`) and the per-campaign counters the
//! dashboard reads (migration 0019), on a real, freshly migrated Postgres per test.

use std::time::Duration;

use serde_json::json;
use sqlx::PgPool;
use store::synthetic::{HistorySpec, MARK, SyntheticError};
use store::{EpisodeFilter, EpisodeStatus, PlannedEpisode, Store};
use uuid::Uuid;

fn small(episodes: u64, steps: u32) -> HistorySpec {
    HistorySpec {
        episodes,
        steps_per_episode: steps,
        campaigns: Some(6),
        tasks: 24,
        batch: 50,
        ..HistorySpec::default()
    }
}

async fn count(store: &Store, sql: &str) -> i64 {
    let (n,): (i64,) = sqlx::query_as(sql).fetch_one(store.pool()).await.unwrap();
    n
}

/// Every campaign's counters as the triggers keep them, and as a fresh aggregate over its
/// episodes says they should be.
async fn counters_match(store: &Store) {
    let rows: Vec<(Uuid, String, String)> = sqlx::query_as(
        "SELECT c.id,
            (SELECT row(s.pending, s.running, s.finished, s.failed, s.cancelled, s.successes,
                s.judge_errors, s.scored, s.score_sum::float8, s.steps, s.judge_calls)::text
             FROM campaign_stats s WHERE s.campaign_id = c.id),
            (SELECT row(count(*) FILTER (WHERE e.status = $1),
                count(*) FILTER (WHERE e.status = $2),
                count(*) FILTER (WHERE e.status = $3),
                count(*) FILTER (WHERE e.status = $4),
                count(*) FILTER (WHERE e.status = $5),
                count(*) FILTER (WHERE e.success),
                count(*) FILTER (WHERE e.judge_error IS NOT NULL),
                count(*) FILTER (WHERE e.status = $3 AND e.score IS NOT NULL),
                coalesce(sum(e.score) FILTER (WHERE e.status = $3), 0)::float8,
                coalesce(sum(e.steps) FILTER (WHERE e.status = $3), 0),
                coalesce(sum(e.judge_calls) FILTER (WHERE e.status = $3), 0))::text
             FROM episodes e WHERE e.campaign_id = c.id)
         FROM campaigns c",
    )
    .bind(EpisodeStatus::Pending)
    .bind(EpisodeStatus::Running)
    .bind(EpisodeStatus::Finished)
    .bind(EpisodeStatus::Failed)
    .bind(EpisodeStatus::Cancelled)
    .fetch_all(store.pool())
    .await
    .unwrap();
    assert!(!rows.is_empty());
    for (id, kept, fresh) in rows {
        assert_eq!(kept, fresh, "campaign {id}: counters drifted");
    }
    let (kept, fresh): (String, String) = sqlx::query_as(
        "SELECT (SELECT coalesce(string_agg(campaign_id || ' ' || digest || ' ' || episodes, ','
                    ORDER BY campaign_id, digest), '')
                 FROM campaign_policies WHERE episodes > 0),
            (SELECT coalesce(string_agg(c || ' ' || d || ' ' || n, ',' ORDER BY c, d), '')
             FROM (SELECT campaign_id AS c, md5(policy::text) AS d, count(*) AS n FROM episodes
                   WHERE status = $1 AND policy IS NOT NULL GROUP BY 1, 2) x)",
    )
    .bind(EpisodeStatus::Finished)
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert!(!fresh.is_empty());
    assert_eq!(kept, fresh, "policy counts drifted");
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn the_generator_writes_the_counts_asked_for(pool: PgPool) {
    let store = Store::from_pool(pool);
    let mut seen = Vec::new();
    let report = store
        .generate_history(&small(300, 4), |p| seen.push(p.episodes))
        .await
        .unwrap();
    assert_eq!(report.episodes, 300);
    assert_eq!(report.steps, 1200);
    assert_eq!(report.campaigns, 6);
    assert_eq!(seen.iter().max(), Some(&300), "progress reaches the end");
    assert_eq!(count(&store, "SELECT count(*) FROM episodes").await, 300);
    assert_eq!(count(&store, "SELECT count(*) FROM steps").await, 1200);
    assert_eq!(count(&store, "SELECT count(*) FROM campaigns").await, 6);
    assert_eq!(
        count(&store, "SELECT sum(steps)::bigint FROM episodes").await,
        1200,
        "each episode's step count matches its stored steps"
    );
    assert_eq!(
        count(&store, "SELECT count(*) FROM verdicts").await as u64,
        report.verdicts
    );
    assert!(report.verdicts > 0);
    // Varied: several outcomes, end reasons, statuses, sites and both splits.
    for (sql, at_least) in [
        ("SELECT count(DISTINCT end_reason) FROM episodes", 4),
        ("SELECT count(DISTINCT status) FROM episodes", 3),
        ("SELECT count(DISTINCT success) FROM episodes", 2),
        ("SELECT count(DISTINCT site) FROM tasks", 8),
        ("SELECT count(DISTINCT split) FROM tasks", 2),
        ("SELECT count(DISTINCT difficulty) FROM tasks", 3),
        ("SELECT count(DISTINCT screenshot) FROM steps", 2),
    ] {
        assert!(count(&store, sql).await >= at_least, "{sql}");
    }
    // Marked: every task and campaign says it is synthetic.
    assert_eq!(
        count(
            &store,
            &format!("SELECT count(*) FROM tasks WHERE NOT '{MARK}' = ANY(tags)")
        )
        .await,
        0
    );
    assert_eq!(store.real_campaigns().await.unwrap(), 0);
    counters_match(&store).await;
    // A second set beside the first (another seed) is not refused: both are synthetic.
    let again = HistorySpec {
        seed: 8,
        ..small(40, 2)
    };
    store.generate_history(&again, |_| {}).await.unwrap();
    assert_eq!(count(&store, "SELECT count(*) FROM episodes").await, 340);
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn real_history_is_refused_unless_forced(pool: PgPool) {
    let store = Store::from_pool(pool);
    let task = tasks::parse_task(
        &json!({"id": "real", "instruction": "x", "start_url": "http://127.0.0.1:1/",
            "rubric": {"groups": [{"facts": [{"check": {"type": "url", "prefix": "http"}}]}]}})
        .to_string(),
    )
    .unwrap();
    store.insert_task(&task).await.unwrap();
    let planned = [PlannedEpisode {
        task_id: "real".into(),
        rollout: 0,
        seed: 1,
    }];
    store
        .create_campaign(Uuid::new_v4(), "real", "scripted", &json!({}), &planned)
        .await
        .unwrap();
    match store.generate_history(&small(20, 2), |_| {}).await {
        Err(SyntheticError::RealData(1)) => {}
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(
        count(&store, "SELECT count(*) FROM episodes").await,
        1,
        "nothing written"
    );
    let forced = HistorySpec {
        force: true,
        ..small(20, 2)
    };
    store.generate_history(&forced, |_| {}).await.unwrap();
    assert_eq!(count(&store, "SELECT count(*) FROM episodes").await, 21);
    // Bad settings name their field.
    let bad = HistorySpec {
        steps_per_episode: 0,
        ..small(20, 2)
    };
    match store.generate_history(&bad, |_| {}).await {
        Err(e @ SyntheticError::Invalid { .. }) => {
            assert!(e.to_string().starts_with("steps_per_episode"), "{e}")
        }
        other => panic!("expected a field error, got {other:?}"),
    }
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn counters_follow_every_episode_write(pool: PgPool) {
    let store = Store::from_pool(pool);
    store
        .generate_history(&small(120, 3), |_| {})
        .await
        .unwrap();
    // A real campaign's life on top: planned, claimed, heartbeats, released, failed,
    // cancelled, deleted.
    let task = tasks::parse_task(
        &json!({"id": "t0", "instruction": "x", "start_url": "http://127.0.0.1:1/",
            "rubric": {"groups": [{"facts": [{"check": {"type": "url", "prefix": "http"}}]}]}})
        .to_string(),
    )
    .unwrap();
    store.insert_task(&task).await.unwrap();
    let planned: Vec<_> = (0..6)
        .map(|r| PlannedEpisode {
            task_id: "t0".into(),
            rollout: r,
            seed: r as i64,
        })
        .collect();
    let id = Uuid::new_v4();
    store
        .create_campaign(id, "c", "scripted", &json!({}), &planned)
        .await
        .unwrap();
    counters_match(&store).await;
    let lease = Duration::from_secs(60);
    let a = store.claim_episode(id, "w", lease).await.unwrap().unwrap();
    let b = store.claim_episode(id, "w", lease).await.unwrap().unwrap();
    assert!(store.heartbeat(a.id, "w", lease).await.unwrap());
    counters_match(&store).await;
    assert!(
        store
            .release_episode(a.id, "w", "crash", false)
            .await
            .unwrap()
    );
    assert!(
        store
            .release_episode(b.id, "w", "crash", true)
            .await
            .unwrap()
    );
    store.fail_pending(id, "cut off").await.unwrap();
    counters_match(&store).await;
    let view = store.get_campaign(id).await.unwrap().unwrap();
    assert_eq!(view.counts.failed, 6);
    assert_eq!(view.counts.pending, 0);
    sqlx::query("DELETE FROM campaigns WHERE id = $1")
        .bind(id)
        .execute(store.pool())
        .await
        .unwrap();
    counters_match(&store).await;
    // The episode list's totals, counted from the counters or the rows, agree with the rows.
    let campaign = store.list_campaigns(1, 0).await.unwrap().0[0].id;
    for (f, sql, status) in [
        (
            EpisodeFilter::default(),
            "SELECT count(*) FROM episodes".to_string(),
            None,
        ),
        (
            EpisodeFilter::campaign(campaign),
            format!("SELECT count(*) FROM episodes WHERE campaign_id = '{campaign}'"),
            None,
        ),
        (
            EpisodeFilter {
                campaign: Some(campaign),
                status: Some(store::StatusFilter::Is(EpisodeStatus::Finished)),
                ..Default::default()
            },
            format!("SELECT count(*) FROM episodes WHERE campaign_id = '{campaign}' AND status = $1"),
            Some(EpisodeStatus::Finished),
        ),
        (
            EpisodeFilter {
                split: Some("test".into()),
                ..Default::default()
            },
            "SELECT count(*) FROM episodes e JOIN tasks t ON t.id = e.task_id WHERE t.split = 'test'"
                .to_string(),
            None,
        ),
    ] {
        let (items, total) = store.list_episodes(&f, 500, 0).await.unwrap();
        let mut rows = sqlx::query_as::<_, (i64,)>(&sql);
        if let Some(s) = status {
            rows = rows.bind(s);
        }
        let (n,) = rows.fetch_one(store.pool()).await.unwrap();
        assert_eq!(total, n, "{f:?}");
        assert_eq!(items.len() as i64, total.min(500), "{f:?}");
    }
}

/// Each phase's figures as `campaign_latency` gives them and as a fresh aggregate over
/// the campaign's steps (and judged episodes) says they should be.
async fn latency_matches_the_steps(store: &Store, campaign: Uuid) {
    // phase, samples, mean, p50, p95, max
    type Fresh = (
        String,
        i64,
        Option<f64>,
        Option<f64>,
        Option<f64>,
        Option<i32>,
    );
    let fresh: Vec<Fresh> = sqlx::query_as(
        "SELECT v.phase, count(*), avg(v.ms)::float8,
                percentile_cont(0.5) WITHIN GROUP (ORDER BY v.ms),
                percentile_cont(0.95) WITHIN GROUP (ORDER BY v.ms), max(v.ms)
             FROM steps s JOIN episodes e ON e.id = s.episode_id
             CROSS JOIN LATERAL (VALUES ('observe', s.observe_ms), ('policy', s.policy_ms),
                ('act', s.act_ms)) AS v(phase, ms)
             WHERE e.campaign_id = $1 GROUP BY 1
             UNION ALL
             SELECT 'judge', count(*), avg(judge_ms)::float8,
                percentile_cont(0.5) WITHIN GROUP (ORDER BY judge_ms),
                percentile_cont(0.95) WITHIN GROUP (ORDER BY judge_ms), max(judge_ms)
             FROM episodes WHERE campaign_id = $1 AND judge_ms IS NOT NULL",
    )
    .bind(campaign)
    .fetch_all(store.pool())
    .await
    .unwrap();
    let kept = store.campaign_latency(campaign).await.unwrap();
    let close = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() < 1e-9 * a.abs().max(1.0),
        (a, b) => a == b,
    };
    for (phase, n, mean, p50, p95, max) in fresh.into_iter().filter(|r| r.1 > 0) {
        let k = kept.iter().find(|k| k.phase == phase).unwrap();
        assert_eq!(k.count, n, "{campaign} {phase}: samples");
        assert_eq!(k.max_ms, max, "{campaign} {phase}: max");
        assert!(
            close(k.mean_ms, mean),
            "{campaign} {phase}: mean {k:?} vs {mean:?}"
        );
        assert!(
            close(k.p50_ms, p50),
            "{campaign} {phase}: p50 {k:?} vs {p50:?}"
        );
        assert!(
            close(k.p95_ms, p95),
            "{campaign} {phase}: p95 {k:?} vs {p95:?}"
        );
        assert_eq!(
            k.bins.iter().map(|b| b.count).sum::<i64>(),
            n,
            "{phase}: bins"
        );
    }
}

/// The fact counts and the steps with page events as the triggers keep them, and as
/// fresh aggregates over verdicts and steps say they should be.
async fn triage_tables_match(store: &Store) {
    let (kept, fresh): (String, String) = sqlx::query_as(
        "SELECT (SELECT coalesce(string_agg(concat_ws(' ', campaign_id, task_id, group_id, fact_id,
                    failed, passed, unchecked), ',' ORDER BY campaign_id, task_id, group_id, fact_id), '')
                 FROM campaign_fact_counts WHERE failed + passed + unchecked > 0),
            (SELECT coalesce(string_agg(concat_ws(' ', c, t, g, f, a, b, n), ',' ORDER BY c, t, g, f), '')
             FROM (SELECT e.campaign_id AS c, e.task_id AS t, v.group_id AS g, v.fact_id AS f,
                     count(*) FILTER (WHERE v.passed = false) AS a,
                     count(*) FILTER (WHERE v.passed) AS b,
                     count(*) FILTER (WHERE v.passed IS NULL) AS n
                   FROM verdicts v JOIN episodes e ON e.id = v.episode_id GROUP BY 1, 2, 3, 4) x)",
    )
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert!(!fresh.is_empty());
    assert_eq!(kept, fresh, "fact counts drifted");
    let (kept, fresh): (String, String) = sqlx::query_as(
        "SELECT (SELECT coalesce(string_agg(concat_ws(' ', campaign_id, site, kind, events, steps,
                    episodes, sample), ',' ORDER BY campaign_id, site, kind), '')
                 FROM (SELECT campaign_id, site, kind, sum(events) AS events, count(*) AS steps,
                         count(DISTINCT episode_id) AS episodes, min(sample) AS sample
                       FROM campaign_page_events GROUP BY 1, 2, 3) k),
            (SELECT coalesce(string_agg(concat_ws(' ', c, site, kind, events, steps, episodes,
                    sample), ',' ORDER BY c, site, kind), '')
             FROM (SELECT e.campaign_id AS c, t.site, ev->>'kind' AS kind,
                     sum(coalesce((ev->>'count')::bigint, 1)) AS events,
                     count(DISTINCT (s.episode_id, s.idx)) AS steps,
                     count(DISTINCT s.episode_id) AS episodes,
                     min(coalesce(ev->>'message', ev->>'url', ev->>'during')) AS sample
                   FROM steps s JOIN episodes e ON e.id = s.episode_id
                     JOIN tasks t ON t.id = e.task_id
                     CROSS JOIN LATERAL jsonb_array_elements(s.events) ev
                   GROUP BY 1, 2, 3) f)",
    )
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert!(!fresh.is_empty(), "the history has no page events");
    assert_eq!(kept, fresh, "page events drifted");
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn pre_aggregates_follow_writes_and_deletes(pool: PgPool) {
    let store = Store::from_pool(pool);
    store
        .generate_history(&small(240, 6), |_| {})
        .await
        .unwrap();
    let campaigns: Vec<(Uuid,)> =
        sqlx::query_as("SELECT DISTINCT campaign_id FROM episodes WHERE steps > 0")
            .fetch_all(store.pool())
            .await
            .unwrap();
    assert!(campaigns.len() >= 3);
    for (c,) in &campaigns {
        latency_matches_the_steps(&store, *c).await;
    }
    triage_tables_match(&store).await;
    // A step taken off by itself, and an episode deleted with its steps (a cascade, whose
    // campaign only the episode still knows).
    let (c, e): (Uuid, Uuid) = sqlx::query_as(
        "SELECT e.campaign_id, e.id FROM episodes e WHERE e.steps > 1 ORDER BY e.id LIMIT 1",
    )
    .fetch_one(store.pool())
    .await
    .unwrap();
    let before = store.campaign_latency(c).await.unwrap()[0].count;
    sqlx::query("DELETE FROM steps WHERE episode_id = $1 AND idx = 0")
        .bind(e)
        .execute(store.pool())
        .await
        .unwrap();
    assert_eq!(
        store.campaign_latency(c).await.unwrap()[0].count,
        before - 1
    );
    latency_matches_the_steps(&store, c).await;
    sqlx::query("DELETE FROM verdicts WHERE episode_id = $1 AND ord = 0")
        .bind(e)
        .execute(store.pool())
        .await
        .unwrap();
    triage_tables_match(&store).await;
    sqlx::query("DELETE FROM episodes WHERE id = $1")
        .bind(e)
        .execute(store.pool())
        .await
        .unwrap();
    latency_matches_the_steps(&store, c).await;
    triage_tables_match(&store).await;
    // Every step with events of one episode deleted: its episode's rows go with them.
    sqlx::query(
        "DELETE FROM steps WHERE episode_id = (SELECT episode_id FROM campaign_page_events LIMIT 1)",
    )
    .execute(store.pool())
    .await
    .unwrap();
    triage_tables_match(&store).await;
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn breakdowns_added_up_from_tasks_are_those_postgres_counts(pool: PgPool) {
    use store::analysis::{Dimension, TaskScope, TaskSort, breakdown};
    let store = Store::from_pool(pool);
    store
        .generate_history(&small(300, 3), |_| {})
        .await
        .unwrap();
    let campaign = store.list_campaigns(1, 0).await.unwrap().0[0].id;
    let scopes = [
        TaskScope::default(),
        TaskScope {
            split: Some("train".into()),
            ..Default::default()
        },
    ];
    for scope in &scopes {
        let tasks = store
            .campaign_task_stats(campaign, scope, 1, TaskSort::default(), false)
            .await
            .unwrap();
        assert!(tasks.len() > 3);
        for (name, d) in Dimension::ALL {
            let sql = store
                .campaign_breakdown_by(campaign, scope, d)
                .await
                .unwrap();
            let summed = breakdown(&tasks, d);
            assert!(!sql.is_empty(), "{name}");
            assert_eq!(summed.len(), sql.len(), "{name}");
            for (a, b) in summed.iter().zip(&sql) {
                assert_eq!(
                    (&a.key, a.tasks, a.episodes, a.judged, a.successes),
                    (&b.key, b.tasks, b.episodes, b.judged, b.successes),
                    "{name}"
                );
                for (x, y) in [
                    (a.success_rate, b.success_rate),
                    (a.mean_score, b.mean_score),
                    (a.mean_steps, b.mean_steps),
                ] {
                    match (x, y) {
                        (Some(x), Some(y)) => assert!((x - y).abs() < 1e-9, "{name} {x} {y}"),
                        (x, y) => assert_eq!(x, y, "{name}"),
                    }
                }
            }
        }
    }
}
