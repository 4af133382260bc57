//! The stages after the browser: finished episodes are judged on their own queue and
//! stored by a writer, each stage behind a bounded channel (backpressure, no unbounded
//! queues). An episode's lease keeps heartbeating until it is stored, so a crash anywhere
//! in the pipeline hands the episode to another runner instead of losing it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rubrics::Trajectory;
use tokio::sync::{Mutex, broadcast, mpsc};
use tokio::task::JoinHandle;
use uuid::Uuid;

use super::RunEvent;
use super::episode::Finished;
use crate::drain::Held;
use crate::judge::{Evidence, ModelJudge};
use metrics::METRICS;
use store::{EpisodeRecord, Store, VerdictOutcome, VerdictRecord};

/// Keeps an episode's lease alive until dropped, and counted among the process's leases
/// (a clean stop waits for them).
pub struct LeaseGuard {
    beat: JoinHandle<()>,
    /// Counted while the guard lives; only dropped.
    _held: Held,
}

impl LeaseGuard {
    /// Starts heartbeating `episode`'s lease every third of its length.
    pub fn start(
        store: Store,
        owner: String,
        lease: Duration,
        episode: Uuid,
        held: Held,
    ) -> LeaseGuard {
        let beat = tokio::spawn(async move {
            loop {
                tokio::time::sleep(lease / 3).await;
                match store.heartbeat(episode, &owner, lease).await {
                    Ok(true) => {}
                    Ok(false) => return,
                    Err(e) => {
                        tracing::warn!(episode = %episode, error = %e, "lease heartbeat failed")
                    }
                }
            }
        });
        LeaseGuard { beat, _held: held }
    }
}

impl Drop for LeaseGuard {
    fn drop(&mut self) {
        self.beat.abort();
    }
}

/// A finished episode on its way to the store.
pub struct Work {
    /// The campaign.
    pub campaign: Uuid,
    /// The episode.
    pub finished: Finished,
    /// Its lease, held until stored.
    pub lease: LeaseGuard,
}

struct Judged {
    campaign: Uuid,
    record: EpisodeRecord,
    task_id: String,
    /// Judging failed (a judge backend down): the episode goes back for a retry.
    failed: Option<String>,
    _lease: LeaseGuard,
}

/// The running judge and store stages.
pub struct Pipeline {
    tx: mpsc::Sender<Work>,
    stages: Vec<JoinHandle<()>>,
}

impl Pipeline {
    /// Starts `judges` judge workers and one writer; `depth` bounds each queue. Facts in
    /// words go to `model` (binary: stop at the first failed group; critic: likeliest
    /// failures first).
    pub fn start(
        store: Store,
        owner: String,
        events: broadcast::Sender<RunEvent>,
        judges: usize,
        depth: usize,
        model: Option<Arc<ModelJudge>>,
        judging: Judging,
    ) -> Pipeline {
        let (tx, rx) = mpsc::channel::<Work>(depth.max(1));
        let (store_tx, store_rx) = mpsc::channel::<Judged>(depth.max(1));
        let rx = Arc::new(Mutex::new(rx));
        let mut stages = Vec::new();
        for _ in 0..judges.max(1) {
            let (rx, store_tx, model) = (rx.clone(), store_tx.clone(), model.clone());
            stages.push(tokio::spawn(async move {
                loop {
                    let Some(work) = rx.lock().await.recv().await else {
                        return;
                    };
                    METRICS.judge_queue.add(-1);
                    let judged = judge(work, model.as_deref(), judging).await;
                    METRICS.store_queue.add(1);
                    if store_tx.send(judged).await.is_err() {
                        return;
                    }
                }
            }));
        }
        drop(store_tx);
        stages.push(tokio::spawn(write(store, owner, events, store_rx)));
        Pipeline { tx, stages }
    }

    /// Hands a finished episode to the judge queue (waits when the queue is full).
    pub async fn submit(&self, work: Work) {
        METRICS.judge_queue.add(1);
        if self.tx.send(work).await.is_err() {
            METRICS.judge_queue.add(-1);
            tracing::error!(
                "the judge queue is closed; the episode's lease will expire and it will be rerun"
            );
        }
    }

    /// Waits until everything submitted is judged and stored.
    pub async fn close(self) {
        drop(self.tx);
        for s in self.stages {
            let _ = s.await;
        }
    }
}

/// How the model judge runs for a campaign.
#[derive(Debug, Clone, Copy, Default)]
pub struct Judging {
    /// Stop at the first failed group.
    pub binary: bool,
    /// Order model facts by the critic.
    pub critic: bool,
}

/// What the model judge is shown of a finished episode.
fn evidence(f: &Finished) -> Evidence {
    let blob = |hash: &str| {
        f.blobs
            .iter()
            .find(|b| b.hash == hash)
            .map(|b| b.bytes.clone())
    };
    let mut screenshots: Vec<Vec<u8>> = f
        .steps
        .iter()
        .filter_map(|s| s.core.screenshot.as_deref().and_then(blob))
        .collect();
    if let Some(last) = blob(&f.final_screenshot) {
        screenshots.push(last);
    }
    Evidence {
        episode: f.run.id,
        instruction: f
            .instruction
            .clone()
            .unwrap_or_else(|| f.run.task.instruction.clone()),
        final_answer: f.final_answer.clone(),
        visited_urls: f.visited.clone(),
        titles: f.steps.iter().map(|s| s.core.title.clone()).collect(),
        final_text: f.snapshot.text.clone(),
        screenshots,
        reference_answer: f.run.task.reference_answer.clone(),
    }
}

async fn judge(work: Work, model: Option<&ModelJudge>, judging: Judging) -> Judged {
    let task_id = work.finished.run.task.id.to_string();
    let (record, failed) = judge_finished(work.finished, model, judging).await;
    Judged {
        campaign: work.campaign,
        failed,
        task_id,
        record,
        _lease: work.lease,
    }
}

/// Judges a finished episode into the record to store; `Some(reason)` when judging itself
/// failed (a judge backend down: not the agent's doing, the episode must not be scored).
pub(crate) async fn judge_finished(
    f: Finished,
    model: Option<&ModelJudge>,
    judging: Judging,
) -> (EpisodeRecord, Option<String>) {
    let t = Instant::now();
    let traj = Trajectory {
        final_answer: f.final_answer.clone(),
        visited_urls: f.visited.clone(),
    };
    let rubric = &f.run.task.rubric;
    let judge_facts = rubric
        .groups()
        .iter()
        .flat_map(|g| &g.facts)
        .filter(|x| matches!(x.check, rubrics::Check::Judge))
        .count() as i32;
    // The snapshot holds every selector and expression the rubric reads: rule checks
    // cannot fail on I/O here; model calls can (a judge server down).
    let judged = match (model, rubric.needs_model()) {
        (Some(m), true) => crate::judge::judge_episode(
            m,
            rubric,
            &traj,
            &f.snapshot,
            evidence(&f),
            judging.binary,
            judging.critic,
        )
        .await
        .map(|j| (j.judgement, j.exhaustive_calls)),
        _ => rubrics::judge(rubric, &traj, &f.snapshot)
            .await
            .map(|j| (j, 0)),
    };
    let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    let failed = judged.as_ref().err().map(|e| format!("judge: {e}"));
    let (success, credit, verdicts, judge_calls, judge_exhaustive_calls, judge_error) = match judged
    {
        Ok((j, exhaustive)) => {
            // The rubric's own error: stored, never scored (retrying cannot fix it).
            let judge_error = j.rubric_error().map(|e| format!("rubric: {e}"));
            if let Some(e) = &judge_error {
                tracing::warn!(episode = %f.run.id, task = %f.run.task.id, error = %e, "the rubric could not be evaluated; the episode is not scored");
            }
            (
                j.success,
                j.credit,
                verdict_records(rubric, j.verdicts, j.skipped),
                count(j.model_calls),
                count(exhaustive),
                judge_error,
            )
        }
        Err(e) => {
            tracing::warn!(episode = %f.run.id, error = %e, "judging failed; the episode will be retried");
            (false, rubrics::Credit::Exact(0.0), Vec::new(), 0, 0, None)
        }
    };
    let judge_time = t.elapsed();
    METRICS.judge_seconds.time(judge_time);
    (
        EpisodeRecord {
            id: f.run.id,
            instruction: f.instruction,
            end_reason: f.end_reason,
            final_answer: f.final_answer,
            final_url: Some(f.snapshot.url.clone()),
            final_screenshot: Some(f.final_screenshot),
            final_page: Some(f.snapshot.to_stored()),
            steps: f.steps,
            verdicts,
            blobs: f.blobs,
            success,
            credit,
            duration: f.duration,
            judge_time: Some(judge_time),
            politeness_wait: f.politeness_wait,
            recorded: f.recorded,
            unmatched_requests: f.unmatched_requests,
            judge_calls,
            judge_facts,
            judge_exhaustive_calls,
            screen: Some(f.screen),
            policy: Some(f.run.policy.card()),
            visited_urls: f.visited,
            judge_error,
        },
        failed,
    )
}

/// The verdicts to store, checked and skipped, in rubric order.
fn verdict_records(
    rubric: &rubrics::Rubric,
    checked: Vec<rubrics::FactVerdict>,
    skipped: Vec<rubrics::SkippedFact>,
) -> Vec<VerdictRecord> {
    let position = |fact: &str| {
        rubric
            .groups()
            .iter()
            .flat_map(|g| &g.facts)
            .position(|f| f.id == fact)
            .unwrap_or(usize::MAX)
    };
    let mut out: Vec<(usize, VerdictRecord)> = checked
        .into_iter()
        .map(|v| {
            (
                position(&v.fact_id),
                VerdictRecord {
                    judge: v.judge,
                    group_id: v.group_id,
                    fact_id: v.fact_id,
                    outcome: VerdictOutcome::Checked {
                        passed: v.passed,
                        evidence: v.evidence,
                        reason: v.reason,
                    },
                },
            )
        })
        .chain(skipped.into_iter().map(|s| {
            (
                position(&s.fact_id),
                VerdictRecord {
                    judge: s.judge,
                    group_id: s.group_id,
                    fact_id: s.fact_id,
                    outcome: VerdictOutcome::Skipped,
                },
            )
        }))
        .collect();
    out.sort_by_key(|(i, _)| *i);
    out.into_iter().map(|(_, v)| v).collect()
}

async fn write(
    store: Store,
    owner: String,
    events: broadcast::Sender<RunEvent>,
    mut rx: mpsc::Receiver<Judged>,
) {
    while let Some(j) = rx.recv().await {
        METRICS.store_queue.add(-1);
        let t = Instant::now();
        let id = j.record.id;
        if let Some(reason) = &j.failed {
            // Never scored: an infrastructure failure, like a crashed browser.
            METRICS.retries.inc("judge");
            if let Err(e) = store.release_episode(id, &owner, reason, false).await {
                tracing::error!(episode = %id, error = %e, "releasing an unjudged episode failed");
            }
            continue;
        }
        match store.finish_episode(&owner, &j.record).await {
            Ok(true) => {
                METRICS.store_seconds.time(t.elapsed());
                METRICS
                    .episodes_finished
                    .inc(if j.record.judge_error.is_some() {
                        "judge_error"
                    } else if j.record.success {
                        "success"
                    } else {
                        "failure"
                    });
                let _ = events.send(RunEvent::EpisodeFinished {
                    campaign: j.campaign,
                    episode: id,
                    task_id: j.task_id,
                    success: j.record.success,
                    steps: j.record.steps.len(),
                });
            }
            Ok(false) => {
                tracing::warn!(episode = %id, "lost the lease before storing; another runner owns the episode")
            }
            Err(e) => {
                tracing::error!(episode = %id, error = %e, "storing an episode failed; it will be retried");
                METRICS.retries.inc("store");
                let _ = store
                    .release_episode(id, &owner, &format!("store: {e}"), false)
                    .await;
            }
        }
    }
}
