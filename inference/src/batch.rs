//! The one batching queue (TGI's router shape), in front of any backend that runs many
//! requests in one call: the rollout policy's ONNX backend and the policy server's model.
//!
//! [`BatchQueue`] is a cheap handle holding only a channel sender; one spawned task owns the
//! queue, forms batches with the pure [`take_batch`] (full, or the oldest request waited
//! long enough), runs one batch at a time, and answers every request on its own channel.
//! Requests whose caller has gone away are dropped when the batch forms; a failed batch
//! answers every member with the error; the task lives on.
//!
//! It knows nothing of what is batched: requests, answers and errors are the runner's.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};

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

/// Runs batches: what the queue is in front of.
pub trait BatchRunner: Send + Sync + 'static {
    /// One request.
    type Request: Send + 'static;
    /// One request's answer.
    type Answer: Send + 'static;
    /// Why a request (or a whole batch) failed.
    type Error: Clone + Send + 'static;

    /// Whether `other` may share a generation call with `first`, the batch's oldest
    /// request (e.g. equal sampling settings); the others wait for a later batch.
    fn compatible(&self, _first: &Self::Request, _other: &Self::Request) -> bool {
        true
    }

    /// One answer per request, in order; an `Err` fails the whole batch.
    #[allow(clippy::type_complexity)]
    fn run(
        &self,
        batch: Vec<Self::Request>,
    ) -> BoxFuture<'_, Result<Vec<Result<Self::Answer, Self::Error>>, Self::Error>>;

    /// The error for a batch that came back with `answered` answers for `asked` requests.
    fn miscounted(&self, answered: usize, asked: usize) -> Self::Error;
}

/// What the queue does, for metrics: a request queued, a batch taken off the queue.
pub trait QueueObserver: Send + Sync + 'static {
    /// A request entered the queue.
    fn queued(&self) {}
    /// `size` requests left the queue as one batch, closed for `reason`.
    fn batch(&self, _size: usize, _reason: CloseReason) {}
}

/// Observes nothing.
pub struct NoObserver;

impl QueueObserver for NoObserver {}

/// What the queue has done, for health endpoints and tests.
#[derive(Debug, Default)]
pub struct BatchStats {
    requests: AtomicU64,
    batches: AtomicU64,
    largest: AtomicU64,
}

impl BatchStats {
    /// Requests run.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
    /// Batches run.
    pub fn batches(&self) -> u64 {
        self.batches.load(Ordering::Relaxed)
    }
    /// The largest batch so far.
    pub fn largest(&self) -> u64 {
        self.largest.load(Ordering::Relaxed)
    }

    /// Counts one batch of `size` requests.
    pub fn record(&self, size: usize) {
        let size = size as u64;
        self.requests.fetch_add(size, Ordering::Relaxed);
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.largest.fetch_max(size, Ordering::Relaxed);
    }
}

/// The queue is full: the caller should retry later.
#[derive(Debug, thiserror::Error)]
#[error("the model is busy ({0} requests waiting); retry later")]
pub struct Busy(pub usize);

/// The queue's task has stopped.
#[derive(Debug, thiserror::Error)]
#[error("the batching queue has stopped")]
pub struct Stopped;

/// A request's answer, as its caller receives it.
pub type Reply<R> = Result<<R as BatchRunner>::Answer, <R as BatchRunner>::Error>;

struct Entry<R: BatchRunner> {
    request: R::Request,
    reply: oneshot::Sender<Reply<R>>,
    queued: Instant,
}

/// A handle on the queue in front of a [`BatchRunner`]. Cloning shares the queue; the task
/// ends when the last handle is dropped (after running what is queued).
pub struct BatchQueue<R: BatchRunner> {
    tx: mpsc::Sender<Entry<R>>,
    capacity: usize,
    observer: Arc<dyn QueueObserver>,
}

impl<R: BatchRunner> Clone for BatchQueue<R> {
    fn clone(&self) -> Self {
        BatchQueue {
            tx: self.tx.clone(),
            capacity: self.capacity,
            observer: self.observer.clone(),
        }
    }
}

impl<R: BatchRunner> BatchQueue<R> {
    /// Starts the batching task (on the current Tokio runtime) for `runner`; at most
    /// `capacity` requests wait in the channel.
    pub fn start(
        runner: Arc<R>,
        limits: BatchLimits,
        capacity: usize,
        observer: Arc<dyn QueueObserver>,
    ) -> BatchQueue<R> {
        let capacity = capacity.max(1);
        let (tx, rx) = mpsc::channel(capacity);
        tokio::spawn(batching_task(runner, limits, rx, observer.clone()));
        BatchQueue {
            tx,
            capacity,
            observer,
        }
    }

    /// Queues `request`, waiting for room when the queue is full (back-pressure).
    pub async fn submit(
        &self,
        request: R::Request,
    ) -> Result<oneshot::Receiver<Reply<R>>, Stopped> {
        let (reply, rx) = oneshot::channel();
        let entry = Entry {
            request,
            reply,
            queued: Instant::now(),
        };
        self.tx.send(entry).await.map_err(|_| Stopped)?;
        self.observer.queued();
        Ok(rx)
    }

    /// Queues `request`, or refuses at once when the queue is full.
    pub fn try_submit(&self, request: R::Request) -> Result<oneshot::Receiver<Reply<R>>, Busy> {
        let (reply, rx) = oneshot::channel();
        let entry = Entry {
            request,
            reply,
            queued: Instant::now(),
        };
        self.tx.try_send(entry).map_err(|_| Busy(self.capacity))?;
        self.observer.queued();
        Ok(rx)
    }
}

async fn batching_task<R: BatchRunner>(
    runner: Arc<R>,
    limits: BatchLimits,
    mut rx: mpsc::Receiver<Entry<R>>,
    observer: Arc<dyn QueueObserver>,
) {
    let mut queue: VecDeque<Entry<R>> = VecDeque::new();
    let mut closing = false;
    loop {
        // Requests whose caller gave up waiting are not worth computing.
        queue.retain(|e| !e.reply.is_closed());
        let waited = queue.front().map_or(Duration::ZERO, |e| e.queued.elapsed());
        match take_batch(queue.len(), waited, limits, closing) {
            Some((n, reason)) => {
                // The oldest request picks the batch; incompatible ones keep their place.
                let mut batch: Vec<Entry<R>> = Vec::with_capacity(n);
                let mut rest = VecDeque::with_capacity(queue.len());
                for e in queue.drain(..) {
                    let fits = batch.len() < n
                        && batch
                            .first()
                            .is_none_or(|first| runner.compatible(&first.request, &e.request));
                    if fits {
                        batch.push(e);
                    } else {
                        rest.push_back(e);
                    }
                }
                queue = rest;
                observer.batch(batch.len(), reason);
                tracing::trace!(size = batch.len(), reason = ?reason, "batch");
                run(&*runner, batch).await;
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

async fn run<R: BatchRunner>(runner: &R, batch: Vec<Entry<R>>) {
    let (requests, replies): (Vec<_>, Vec<_>) =
        batch.into_iter().map(|e| (e.request, e.reply)).unzip();
    let n = requests.len();
    match runner.run(requests).await {
        Ok(answers) if answers.len() == n => {
            for (reply, a) in replies.into_iter().zip(answers) {
                let _ = reply.send(a);
            }
        }
        Ok(answers) => {
            let e = runner.miscounted(answers.len(), n);
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
