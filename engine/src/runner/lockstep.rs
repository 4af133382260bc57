//! The lockstep schedule, the naive synchronous baseline: claim a batch of episodes, then
//! at every step observe all of them (barrier), make one batched policy call, act on all
//! of them (barrier). Finished episodes leave holes until the whole batch is done. Kept to
//! measure what the async schedule wins.

use std::time::Instant;

use super::episode::{Episode, InfraError};
use super::pipeline::{LeaseGuard, Work};
use super::{CampaignRun, Claim, Runner};
use crate::error::EngineError;
use store::ClaimedEpisode;

struct Slot {
    claim: ClaimedEpisode,
    lease: LeaseGuard,
    episode: Option<Episode>,
}

pub(super) async fn run(
    runner: &Runner,
    run: &CampaignRun,
    batch: usize,
) -> Result<(), EngineError> {
    loop {
        let mut claims = Vec::new();
        let mut wait = false;
        while claims.len() < batch {
            match runner.next_claim(run).await? {
                Claim::Episode(ep, lease) => claims.push((ep, lease)),
                Claim::Wait => {
                    wait = true;
                    break;
                }
                Claim::Done => break,
            }
        }
        if claims.is_empty() {
            if wait {
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                continue;
            }
            return Ok(());
        }
        run_batch(runner, run, claims).await?;
    }
}

async fn run_batch(
    runner: &Runner,
    run: &CampaignRun,
    claims: Vec<(ClaimedEpisode, LeaseGuard)>,
) -> Result<(), EngineError> {
    // One policy (one version of a following policy) for the whole batch and its whole
    // length: the batch makes one call per step.
    let policy = run.policy.pinned().unwrap_or_else(|| run.policy.clone());
    let mut prepared = Vec::new();
    for (claim, lease) in claims {
        if let Some(mut er) = runner.prepare(run, &claim).await? {
            er.policy = policy.clone();
            prepared.push((claim, lease, er));
        }
    }
    let opened = futures::future::join_all(
        prepared
            .iter()
            .map(|(_, _, er)| Episode::open(&runner.pool, er.clone())),
    )
    .await;
    let mut slots = Vec::new();
    for ((claim, lease, _), ep) in prepared.into_iter().zip(opened) {
        match ep {
            Ok(episode) => slots.push(Slot {
                claim,
                lease,
                episode: Some(episode),
            }),
            Err(e) => runner.failed(run, &claim, &e.to_string(), e.kind()).await?,
        }
    }
    let mut failures: Vec<(usize, InfraError)> = Vec::new();
    loop {
        let cut = *run.cut.borrow();
        let mut active: Vec<(usize, &mut Episode)> = slots
            .iter_mut()
            .enumerate()
            .filter_map(|(i, s)| s.episode.as_mut().map(|e| (i, e)))
            .filter(|(_, e)| !e.done())
            .collect();
        if active.is_empty() {
            break;
        }
        if cut {
            for (_, e) in active.iter_mut() {
                e.cut();
            }
            break;
        }
        // Barrier 1: every active episode observes.
        let observed = futures::future::join_all(active.iter_mut().map(|(_, e)| e.observe())).await;
        let mut ready = Vec::new();
        let mut inputs = Vec::new();
        for ((i, e), obs) in active.into_iter().zip(observed) {
            match obs {
                Ok(input) => {
                    ready.push((i, e));
                    inputs.push(input);
                }
                Err(err) => failures.push((i, err)),
            }
        }
        // One policy call for the whole batch.
        let t = Instant::now();
        let decisions = if policy.wants_numbers() {
            let decisions = policy.decide_batch(inputs.clone()).await;
            futures::future::join_all(
                ready
                    .iter()
                    .zip(inputs)
                    .zip(decisions)
                    .map(|(((_, e), i), d)| e.renumber(policy.as_ref(), i, d)),
            )
            .await
        } else {
            policy.decide_batch(inputs).await
        };
        let took = t.elapsed();
        // Barrier 2: every episode acts.
        let applied = futures::future::join_all(
            ready
                .iter_mut()
                .zip(decisions)
                .map(|((_, e), d)| e.apply(d, took)),
        )
        .await;
        for ((i, _), r) in ready.into_iter().zip(applied) {
            if let Err(err) = r {
                failures.push((i, err));
            }
        }
        // Failed episodes leave the batch now.
        for (i, _) in &failures {
            if let Some(ep) = slots[*i].episode.take() {
                ep.abandon().await;
            }
        }
    }
    for (i, err) in failures {
        runner
            .failed(run, &slots[i].claim, &err.to_string(), err.kind())
            .await?;
    }
    // The batch ends together: finish every surviving episode, then hand them on.
    let mut finishing = Vec::new();
    for slot in slots {
        if let Some(ep) = slot.episode {
            finishing.push((slot.claim, slot.lease, ep));
        }
    }
    let finished = futures::future::join_all(
        finishing
            .into_iter()
            .map(|(claim, lease, ep)| async move { (claim, lease, ep.finish().await) }),
    )
    .await;
    for (claim, lease, result) in finished {
        match result {
            Ok(finished) => {
                run.pipeline
                    .submit(Work {
                        campaign: run.id,
                        finished,
                        lease,
                    })
                    .await
            }
            Err(e) => runner.failed(run, &claim, &e.to_string(), e.kind()).await?,
        }
    }
    Ok(())
}
