//! The rollout policy's side of the batching queue: [`Batched`] is a [`Policy`] that sends
//! every step through `inference`'s one [`BatchQueue`] to a [`BatchBackend`] (an ONNX
//! session, a model server), and counts the queue in the engine's metrics.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
pub use inference::batch::{BatchLimits, CloseReason, take_batch};
use inference::batch::{BatchQueue, BatchRunner, QueueObserver};

use super::{Decision, Policy, PolicyError, StepInput};
use metrics::METRICS;
use store::PolicyCard;

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

/// A backend as the queue runs it.
struct Runner(Arc<dyn BatchBackend>);

impl BatchRunner for Runner {
    type Request = StepInput;
    type Answer = Decision;
    type Error = PolicyError;

    fn run(
        &self,
        batch: Vec<StepInput>,
    ) -> BoxFuture<'_, Result<Vec<Result<Decision, PolicyError>>, PolicyError>> {
        self.0.run_batch(batch)
    }

    fn miscounted(&self, answered: usize, asked: usize) -> PolicyError {
        PolicyError::Failed(format!("backend answered {answered} of {asked} requests"))
    }
}

/// The queue in the engine's metrics.
struct Metrics;

impl QueueObserver for Metrics {
    fn queued(&self) {
        METRICS.policy_queue.add(1);
    }

    fn batch(&self, size: usize, _reason: CloseReason) {
        METRICS.policy_queue.add(-(size as i64));
        METRICS.policy_batch_size.observe(size as f64);
    }
}

/// A [`Policy`] that funnels every request through a batching queue to a backend.
#[derive(Clone)]
pub struct Batched {
    name: String,
    card: PolicyCard,
    queue: BatchQueue<Runner>,
}

impl Batched {
    /// Starts the batching task for `backend`.
    pub fn new(
        name: impl Into<String>,
        backend: Arc<dyn BatchBackend>,
        limits: BatchLimits,
    ) -> Batched {
        let name = name.into();
        let card = backend
            .card(&name)
            .with("max_batch", limits.max_batch)
            .with("max_wait_ms", limits.max_wait.as_millis() as u64);
        // Bounded: when the backend falls behind, episodes wait here rather than pile up.
        let capacity = limits.max_batch.max(1) * 8;
        let queue = BatchQueue::start(
            Arc::new(Runner(backend)),
            limits,
            capacity,
            Arc::new(Metrics),
        );
        Batched { name, card, queue }
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
            let rx = self
                .queue
                .submit(input)
                .await
                .map_err(|e| PolicyError::Unavailable(e.to_string()))?;
            rx.await.unwrap_or_else(|_| {
                Err(PolicyError::Unavailable(
                    "the batching task dropped the request".into(),
                ))
            })
        }
        .boxed()
    }
}
