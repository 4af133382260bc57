//! The batching queue between episodes and a batched policy backend (TGI's router shape).
//!
//! [`Batched`] is a cheap handle holding only a channel sender; one spawned task owns the
//! queue, forms batches with the pure [`take_batch`] (full, or the oldest request waited
//! long enough), runs one batch at a time on the backend, and answers every request on
//! its own channel. Requests whose episode has gone away are dropped when the batch forms;
//! a failed batch answers every member with the error; the task lives on.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};

use super::{Decision, Policy, PolicyCard, PolicyError, StepInput};
use crate::metrics::METRICS;

/// A backend that decides many inputs in one call (an ONNX session, a model server).
pub trait BatchBackend: Send + Sync + 'static {
    /// The card of the policy serving this backend under `name` (see [`Policy::card`]).
    fn card(&self, name: &str) -> PolicyCard {
        PolicyCard::new(name, "batched")
    }

    /// One decision per input, in order; an `Err` fails the whole batch.
    fn run_batch(
        &self,
        inputs: Vec<StepInput>,
    ) -> BoxFuture<'_, Result<Vec<Result<Decision, PolicyError>>, PolicyError>>;
}

/// How batches are formed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchLimits {
    /// Largest batch.
    pub max_batch: usize,
    /// Longest a request waits for companions before a partial batch runs.
    pub max_wait: Duration,
}

/// Why a batch was closed (a metric and span field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// It reached `max_batch`.
    Full,
    /// Its oldest request waited `max_wait`.
    WaitedOut,
    /// The queue is shutting down: run what is left.
    Shutdown,
}

/// The batching decision, free of clocks and channels: given the queue length, how long
/// its oldest request has waited, and whether input has ended, returns how many requests
/// to take now and why, or `None` to keep waiting.
pub fn take_batch(
    queued: usize,
    oldest_waited: Duration,
    limits: BatchLimits,
    closing: bool,
) -> Option<(usize, CloseReason)> {
    if queued == 0 {
        return None;
    }
    let max = limits.max_batch.max(1);
    if queued >= max {
        Some((max, CloseReason::Full))
    } else if closing {
        Some((queued, CloseReason::Shutdown))
    } else if oldest_waited >= limits.max_wait {
        Some((queued, CloseReason::WaitedOut))
    } else {
        None
    }
}

struct Entry {
    input: StepInput,
    reply: oneshot::Sender<Result<Decision, PolicyError>>,
    queued: Instant,
}

/// A [`Policy`] that funnels every request through a batching queue to a backend.
#[derive(Clone)]
pub struct Batched {
    name: String,
    card: PolicyCard,
    tx: mpsc::Sender<Entry>,
}

impl Batched {
    /// Starts the batching task for `backend`.
    pub fn new(
        name: impl Into<String>,
        backend: Arc<dyn BatchBackend>,
        limits: BatchLimits,
    ) -> Batched {
        // Bounded: when the backend falls behind, episodes wait here rather than pile up.
        let (tx, rx) = mpsc::channel(limits.max_batch.max(1) * 8);
        let name = name.into();
        let card = backend
            .card(&name)
            .with("max_batch", limits.max_batch)
            .with("max_wait_ms", limits.max_wait.as_millis() as u64);
        tokio::spawn(batching_task(backend, limits, rx));
        Batched { name, card, tx }
    }
}

impl Policy for Batched {
    fn name(&self) -> &str {
        &self.name
    }

    fn card(&self) -> PolicyCard {
        self.card.clone()
    }

    fn decide(&self, input: StepInput) -> BoxFuture<'_, Result<Decision, PolicyError>> {
        async move {
            let (reply, rx) = oneshot::channel();
            let entry = Entry {
                input,
                reply,
                queued: Instant::now(),
            };
            self.tx
                .send(entry)
                .await
                .map_err(|_| PolicyError::Unavailable("the batching queue has stopped".into()))?;
            METRICS.policy_queue.add(1);
            rx.await.unwrap_or_else(|_| {
                Err(PolicyError::Unavailable(
                    "the batching task dropped the request".into(),
                ))
            })
        }
        .boxed()
    }
}

async fn batching_task(
    backend: Arc<dyn BatchBackend>,
    limits: BatchLimits,
    mut rx: mpsc::Receiver<Entry>,
) {
    let mut queue: VecDeque<Entry> = VecDeque::new();
    let mut closing = false;
    loop {
        // Requests whose episode gave up waiting are not worth computing.
        queue.retain(|e| !e.reply.is_closed());
        let waited = queue.front().map_or(Duration::ZERO, |e| e.queued.elapsed());
        match take_batch(queue.len(), waited, limits, closing) {
            Some((n, reason)) => {
                let batch: Vec<Entry> = queue.drain(..n).collect();
                METRICS.policy_queue.add(-(n as i64));
                METRICS.policy_batch_size.observe(n as f64);
                tracing::trace!(size = n, reason = ?reason, "policy batch");
                run(&*backend, batch).await;
            }
            None if closing => return,
            None => {
                let wait = limits.max_wait.saturating_sub(waited);
                let next = if queue.is_empty() {
                    rx.recv().await
                } else {
                    match tokio::time::timeout(wait, rx.recv()).await {
                        Ok(next) => next,
                        Err(_) => continue,
                    }
                };
                match next {
                    Some(e) => queue.push_back(e),
                    None => closing = true,
                }
                // Take everything already waiting in the channel without sleeping.
                while let Ok(e) = rx.try_recv() {
                    queue.push_back(e);
                }
            }
        }
    }
}

async fn run(backend: &dyn BatchBackend, batch: Vec<Entry>) {
    let (inputs, replies): (Vec<_>, Vec<_>) = batch.into_iter().map(|e| (e.input, e.reply)).unzip();
    let n = inputs.len();
    match backend.run_batch(inputs).await {
        Ok(results) if results.len() == n => {
            for (reply, r) in replies.into_iter().zip(results) {
                let _ = reply.send(r);
            }
        }
        Ok(results) => {
            let e = PolicyError::Failed(format!(
                "backend answered {} of {n} requests",
                results.len()
            ));
            for reply in replies {
                let _ = reply.send(Err(e.clone()));
            }
        }
        Err(e) => {
            for reply in replies {
                let _ = reply.send(Err(e.clone()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: BatchLimits = BatchLimits {
        max_batch: 4,
        max_wait: Duration::from_millis(50),
    };

    #[test]
    fn batches_close_when_full_waited_out_or_shutting_down() {
        let ms = Duration::from_millis;
        assert_eq!(take_batch(0, ms(999), L, false), None);
        assert_eq!(take_batch(0, ms(0), L, true), None);
        assert_eq!(
            take_batch(2, ms(10), L, false),
            None,
            "keeps waiting for companions"
        );
        assert_eq!(
            take_batch(2, ms(50), L, false),
            Some((2, CloseReason::WaitedOut))
        );
        assert_eq!(take_batch(4, ms(0), L, false), Some((4, CloseReason::Full)));
        assert_eq!(
            take_batch(9, ms(0), L, false),
            Some((4, CloseReason::Full)),
            "never above max"
        );
        assert_eq!(
            take_batch(3, ms(0), L, true),
            Some((3, CloseReason::Shutdown))
        );
        let one = BatchLimits { max_batch: 0, ..L };
        assert_eq!(
            take_batch(2, ms(0), one, false),
            Some((1, CloseReason::Full)),
            "max 0 means 1"
        );
    }
}
