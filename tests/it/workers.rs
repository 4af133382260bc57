//! Rollout workers as separate processes sharing one Postgres: a worker killed with
//! SIGKILL mid-campaign (its browsers too, as when a machine dies) loses no finished
//! episode and duplicates none once another worker resumes; a worker or a server stopped
//! with SIGTERM fails nothing and counts no attempt for what it hands back; three workers
//! run every episode exactly once.

use crate::common;

use std::collections::HashMap;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

use std::time::{Duration, Instant};

use common::database_url;
use engine::CampaignSpec;
use engine::SitesServer;
use policy::PolicyRegistry;
use sqlx::PgPool;
use store::{EpisodeStatus, Store, TaskFilter};
use uuid::Uuid;

/// Signals the process group a worker leads. Never through `kill(1)`: its parsing of
/// `-<pgid>` is not to be trusted (a mistake there signals every process, `kill -1`).
fn signal_group(leader: u32, signal: i32) {
    let pgid = i32::try_from(leader).expect("pids fit an i32");
    assert!(pgid > 1, "refusing to signal process group {pgid}");
    // SAFETY: kill(2) with a negative pid other than -1 signals exactly that process group,
    // which the worker leads (spawned with `process_group(0)`).
    unsafe { libc::kill(-pgid, signal) };
}

struct Worker {
    child: Child,
    log: std::path::PathBuf,
}

impl Worker {
    fn spawn(db: &str, name: &str) -> Worker {
        Worker::spawn_with(db, name, &[])
    }

    fn spawn_with(db: &str, name: &str, extra: &[&str]) -> Worker {
        Worker::launch(db, name, &["worker"], extra)
    }

    /// `surfgym COMMAND...` with the workers' settings (short leases, simulated latency,
    /// two browser contexts).
    fn launch(db: &str, name: &str, command: &[&str], extra: &[&str]) -> Worker {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("workers");
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join(format!("{name}-{}.log", Uuid::new_v4().simple()));
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_surfgym"))
            .args(command)
            .args([
                "--lease-secs",
                "3",
                "--sim-latency-ms",
                "150",
                "--sim-sigma",
                "0.3",
                "--contexts",
                "2",
            ])
            .args(extra)
            .env("DATABASE_URL", db)
            .env(
                "SURFGYM_LOG",
                std::env::var("WORKER_LOG").unwrap_or_else(|_| "info,chromiumoxide=error".into()),
            )
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            // Its own process group, so a kill takes its browsers down with it.
            .process_group(0)
            .spawn()
            .unwrap();
        Worker { child, log }
    }

    /// The metrics URL the worker printed (with `--metrics-addr`).
    async fn metrics_url(&self) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            if let Some(url) = log.lines().find_map(|l| l.strip_prefix("metrics at ")) {
                return url.trim().to_string();
            }
            assert!(
                Instant::now() < deadline,
                "no metrics address in {}",
                self.log.display()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL to the worker and every browser it started (its process group).
    fn kill_hard(&mut self) {
        signal_group(self.pid(), libc::SIGKILL);
        let _ = self.child.wait();
    }

    fn stop(mut self) {
        assert!(
            self.terminate(Duration::from_secs(20)),
            "{}",
            self.log.display()
        );
    }

    /// SIGTERM to the worker alone (it stops its browsers itself); whether it exited
    /// with status 0 within `limit` (else it is killed).
    fn terminate(&mut self, limit: Duration) -> bool {
        let pid = i32::try_from(self.pid()).expect("pids fit an i32");
        assert!(pid > 1);
        // SAFETY: kill(2) with a positive pid signals exactly that process.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        self.kill_hard();
        false
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            signal_group(self.child.id(), libc::SIGKILL);
            let _ = self.child.wait();
        }
    }
}

async fn setup(pool: PgPool) -> (Store, SitesServer, Uuid) {
    let simulated = PolicyRegistry::with_simulated(policy::LatencyModel {
        median: Duration::from_millis(150),
        sigma: 0.3,
        batch_overhead: Duration::ZERO,
    });
    let (engine, sites, _) = common::engine_with_sites(pool, simulated).await;
    let id = engine
        .create_campaign(CampaignSpec {
            policy: Some("scripted-sim".into()),
            rollouts_per_task: Some(1),
            tasks: Some(TaskFilter {
                site: Some("wiki".into()),
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .unwrap();
    (engine.store().clone(), sites, id)
}

async fn wait_until(
    store: &Store,
    id: Uuid,
    what: &str,
    mut done: impl FnMut(&store::CampaignView) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let v = store.get_campaign(id).await.unwrap().unwrap();
        if done(&v) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {:?} {}",
            v.counts,
            v.status
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Every finished episode has exactly its own steps (contiguous, no duplicates) and one
/// verdict per rubric fact.
async fn assert_exact_accounting(store: &Store, id: Uuid) {
    let rows: Vec<(Uuid, String, i32, i64, i64, i32, i64)> = sqlx::query_as(
        "SELECT e.id, e.task_id, e.steps,
            (SELECT count(*) FROM steps s WHERE s.episode_id = e.id),
            (SELECT count(DISTINCT idx) FROM steps s WHERE s.episode_id = e.id),
            coalesce((SELECT max(idx) FROM steps s WHERE s.episode_id = e.id), -1),
            (SELECT count(*) FROM verdicts v WHERE v.episode_id = e.id)
         FROM episodes e WHERE e.campaign_id = $1",
    )
    .bind(id)
    .fetch_all(store.pool())
    .await
    .unwrap();
    let facts: HashMap<String, usize> = store
        .load_tasks(&TaskFilter::default())
        .await
        .unwrap()
        .into_iter()
        .map(|t| (t.id.to_string(), t.rubric.fact_count()))
        .collect();
    for (ep, task, steps, rows, distinct, max_idx, verdicts) in rows {
        assert_eq!(
            (rows, distinct, max_idx + 1),
            (i64::from(steps), i64::from(steps), steps),
            "episode {ep} steps"
        );
        assert_eq!(verdicts as usize, facts[&task], "episode {ep} verdicts");
    }
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_worker_killed_mid_campaign_loses_and_duplicates_nothing(pool: PgPool) {
    let db = database_url(&pool);
    let (store, _sites, id) = setup(pool).await;
    let mut first = Worker::spawn(&db, "first");
    wait_until(&store, id, "a few finished episodes", |v| {
        v.counts.finished >= 4 && v.counts.running > 0
    })
    .await;
    first.kill_hard();
    let at_kill = store.get_campaign(id).await.unwrap().unwrap();
    let finished_before: Vec<(Uuid, i32, Option<String>)> = sqlx::query_as(
        "SELECT id, attempts, finished_by FROM episodes WHERE campaign_id = $1 AND status = $2",
    )
    .bind(id)
    .bind(EpisodeStatus::Finished)
    .fetch_all(store.pool())
    .await
    .unwrap();
    assert!(!finished_before.is_empty());
    let in_flight: Vec<(Uuid,)> =
        sqlx::query_as("SELECT id FROM episodes WHERE campaign_id = $1 AND status = $2")
            .bind(id)
            .bind(EpisodeStatus::Running)
            .fetch_all(store.pool())
            .await
            .unwrap();
    assert!(
        !in_flight.is_empty(),
        "the kill interrupted running episodes"
    );

    let second = Worker::spawn(&db, "second");
    wait_until(&store, id, "the campaign to complete", |v| {
        v.status == store::Status::Completed
    })
    .await;
    let v = store.get_campaign(id).await.unwrap().unwrap();
    assert_eq!(
        (v.counts.finished, v.counts.failed),
        (v.total_episodes, 0),
        "{}",
        second.log.display()
    );
    assert!(
        v.counts.finished >= at_kill.counts.finished,
        "no finished episode lost"
    );
    assert_eq!(v.success_rate, Some(1.0));
    for (ep,) in in_flight {
        let e = store.get_episode(ep).await.unwrap().unwrap().summary;
        assert!(e.attempts >= 2, "interrupted episode {ep} ran again");
    }
    // Episodes stored before the kill were left alone: one attempt, by the killed worker.
    for (ep, attempts, by) in &finished_before {
        let by = by.as_deref().unwrap_or_default();
        assert_eq!(*attempts, 1, "episode {ep} finished before the kill");
        assert!(
            by.contains(&format!(":{}:", first.pid())),
            "episode {ep} finished before the kill by {by}"
        );
        let (attempts_now, by_now): (i32, Option<String>) =
            sqlx::query_as("SELECT attempts, finished_by FROM episodes WHERE id = $1")
                .bind(ep)
                .fetch_one(store.pool())
                .await
                .unwrap();
        assert_eq!(
            (attempts_now, by_now.as_deref()),
            (1, Some(by)),
            "episode {ep} finished before the kill was run or stored again"
        );
    }
    assert_exact_accounting(&store, id).await;
    let by = store.finished_by(id).await.unwrap();
    assert!(
        by.iter()
            .any(|(o, _)| o.contains(&format!(":{}:", first.pid()))),
        "{by:?}"
    );
    assert!(
        by.iter()
            .any(|(o, _)| o.contains(&format!(":{}:", second.pid()))),
        "{by:?}"
    );
    second.stop();
}

/// Episodes by status, and those that took more than one attempt.
async fn statuses(store: &Store, id: Uuid) -> (HashMap<String, i64>, i64) {
    let rows: Vec<(String, i64)> = sqlx::query_as(
        "SELECT status, count(*) FROM episodes WHERE campaign_id = $1 GROUP BY status",
    )
    .bind(id)
    .fetch_all(store.pool())
    .await
    .unwrap();
    let (retried,): (i64,) =
        sqlx::query_as("SELECT count(*) FROM episodes WHERE campaign_id = $1 AND attempts > 1")
            .bind(id)
            .fetch_one(store.pool())
            .await
            .unwrap();
    (rows.into_iter().collect(), retried)
}

/// SIGTERM mid-campaign (a deploy, a container stop): `command` stops taking episodes,
/// lets the running ones finish within `grace` or hands them back, and exits 0; nothing
/// fails, no attempt is counted for what it abandoned, and a worker started after it
/// completes the campaign with every episode run once.
async fn sigterm_loses_no_queued_work(pool: PgPool, command: &[&str], grace: &str) {
    let db = database_url(&pool);
    let (store, _sites, id) = setup(pool).await;
    let total = store
        .get_campaign(id)
        .await
        .unwrap()
        .unwrap()
        .total_episodes;
    let mut first = Worker::launch(&db, "stopped", command, &["--grace-secs", grace]);
    wait_until(
        &store,
        id,
        "running episodes after a few finished ones",
        |v| v.counts.finished >= 2 && v.counts.running > 0,
    )
    .await;
    assert!(
        first.terminate(Duration::from_secs(60)),
        "exits 0 on SIGTERM: {}",
        first.log.display()
    );
    let (after_stop, retried) = statuses(&store, id).await;
    let n = |s: &str| after_stop.get(s).copied().unwrap_or(0);
    assert_eq!(
        (n("running"), n("failed"), n("cancelled")),
        (0, 0, 0),
        "nothing left leased or failed by the stop: {after_stop:?} ({})",
        first.log.display()
    );
    assert_eq!(n("pending") + n("finished"), total);
    assert!(
        n("pending") > 0,
        "the stop left queued work: {after_stop:?}"
    );
    assert_eq!(retried, 0, "no attempt counted twice");
    let (never_started,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM episodes WHERE campaign_id = $1 AND status = $2
           AND attempts = 0 AND started_at IS NULL",
    )
    .bind(id)
    .bind(EpisodeStatus::Pending)
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert_eq!(
        never_started,
        n("pending"),
        "a handed-back episode counts no attempt"
    );

    // It serves the practice sites itself: a stopped server's registrations named its own.
    let second = Worker::spawn_with(&db, "after", &["--serve-sites", "--sites-port", "0"]);
    wait_until(&store, id, "the campaign to complete", |v| {
        v.status == store::Status::Completed
    })
    .await;
    let v = store.get_campaign(id).await.unwrap().unwrap();
    assert_eq!((v.counts.finished, v.counts.failed), (total, 0));
    assert_eq!(statuses(&store, id).await.1, 0, "every episode ran once");
    assert_exact_accounting(&store, id).await;
    second.stop();
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_worker_stopped_with_sigterm_hands_back_its_running_episodes(pool: PgPool) {
    // No grace: the running episodes go back to the queue at once.
    sigterm_loses_no_queued_work(pool, &["worker"], "0").await;
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_server_stopped_with_sigterm_finishes_its_running_episodes(pool: PgPool) {
    sigterm_loses_no_queued_work(pool, &["serve", "--port", "0", "--sites-port", "0"], "60").await;
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn three_workers_run_every_episode_exactly_once(pool: PgPool) {
    let db = database_url(&pool);
    let (store, _sites, id) = setup(pool).await;
    let workers: Vec<Worker> = (0..3)
        .map(|i| Worker::spawn_with(&db, &format!("w{i}"), &["--metrics-addr", "127.0.0.1:0"]))
        .collect();
    wait_until(&store, id, "the campaign to complete", |v| {
        v.status == store::Status::Completed
    })
    .await;
    let v = store.get_campaign(id).await.unwrap().unwrap();
    assert_eq!((v.counts.finished, v.counts.failed), (v.total_episodes, 0));
    let (reruns,): (i64,) =
        sqlx::query_as("SELECT count(*) FROM episodes WHERE campaign_id = $1 AND attempts <> 1")
            .bind(id)
            .fetch_one(store.pool())
            .await
            .unwrap();
    assert_eq!(reruns, 0, "no episode ran twice");
    assert_exact_accounting(&store, id).await;
    let by = store.finished_by(id).await.unwrap();
    let total: i64 = by.iter().map(|(_, n)| n).sum();
    assert_eq!(total, v.total_episodes);
    for w in &workers {
        assert!(
            by.iter()
                .any(|(o, n)| o.contains(&format!(":{}:", w.pid())) && *n > 0),
            "worker {} ran episodes: {by:?} (log {})",
            w.pid(),
            w.log.display()
        );
    }
    // Each worker's own /metrics counts the episodes it stored, and nothing else.
    for w in &workers {
        let text = reqwest::get(w.metrics_url().await)
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let counted: i64 = text
            .lines()
            .filter(|l| l.starts_with("surfgym_episodes_finished_total{"))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<i64>().unwrap())
            .sum();
        let stored = by
            .iter()
            .find(|(o, _)| o.contains(&format!(":{}:", w.pid())))
            .map_or(0, |(_, n)| *n);
        assert_eq!(counted, stored, "worker {} metrics:\n{text}", w.pid());
    }
    for w in workers {
        w.stop();
    }
}
