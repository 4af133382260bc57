//! Cross-request batching for `serve-policy`: concurrent chat requests go through the one
//! batching queue ([`crate::batch`]), collected for up to `max_wait` (at most `max_batch`)
//! and generated as one padded batch, so a remote GPU sees full batches.
//!
//! Handlers hand jobs to the queue (a full queue answers 503 at once rather than piling up
//! work) and wait on a oneshot.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::batch::{BatchLimits, BatchQueue, BatchRunner, NoObserver};
pub use crate::batch::{BatchStats, Busy};
use crate::grammar::ActionGrammar;
use crate::{GenParams, Generation, Model, expand_images, template};

/// How requests are grouped.
#[derive(Debug, Clone, Copy)]
pub struct Batching {
    /// Most requests per generation call.
    pub max_batch: usize,
    /// How long the first request of a batch waits for others.
    pub max_wait: Duration,
    /// Requests that may wait for the model before new ones are refused (503).
    pub queue_capacity: usize,
}

impl Default for Batching {
    fn default() -> Self {
        Batching {
            max_batch: 8,
            max_wait: Duration::from_millis(5),
            queue_capacity: 256,
        }
    }
}

/// One request's work: chat messages (image parts already `{"type": "image"}`) and their
/// images, in order.
pub struct Job {
    /// Messages for the chat template.
    pub messages: Value,
    /// Decoded images, in prompt order.
    pub images: Vec<image::DynamicImage>,
    /// Sampling settings.
    pub params: GenParams,
    /// Sampling seed.
    pub seed: u64,
    /// Guided decoding: the output must match this (vLLM's `guided_regex`).
    pub grammar: Option<ActionGrammar>,
    /// Whether the reply reports each token's text (log-probabilities asked for by text,
    /// not by id): decoded only then, on the generation thread that holds the tokenizer.
    pub pieces: bool,
}

/// A finished job.
pub struct Done {
    /// What the model generated.
    pub generation: Generation,
    /// The prompt's length in tokens.
    pub prompt_tokens: usize,
    /// Each generated token alone as text (what `logprobs.content[].token` reports), when
    /// the job asked for them; else empty.
    pub pieces: Vec<String>,
}

/// A finished job, or why there is none.
pub type JobResult = Result<Done, JobError>;

/// Why a job produced nothing, in words for the client.
#[derive(Debug, Clone)]
pub enum JobError {
    /// The request cannot be run (its template or images): the client's to fix.
    Request(String),
    /// The model failed while generating: the server's.
    Model(String),
}

/// Hands jobs to the generation task. Cloning shares the queue; it ends when the last
/// handle is dropped.
#[derive(Clone)]
pub struct GenerationQueue {
    queue: BatchQueue<Generator>,
    stats: Arc<BatchStats>,
}

impl GenerationQueue {
    /// Starts the generation task over `model` (shared: a judge may use it too), on the
    /// current Tokio runtime.
    pub fn start(model: Arc<Mutex<Model>>, batching: Batching) -> std::io::Result<Self> {
        let stats = Arc::new(BatchStats::default());
        let runner = Generator {
            model,
            stats: stats.clone(),
        };
        let limits = BatchLimits {
            max_batch: batching.max_batch.max(1),
            max_wait: batching.max_wait,
        };
        let queue = BatchQueue::start(
            Arc::new(runner),
            limits,
            batching.queue_capacity,
            Arc::new(NoObserver),
        );
        Ok(GenerationQueue { queue, stats })
    }

    /// Queues a job; the receiver gets its result.
    pub fn submit(&self, job: Job) -> Result<oneshot::Receiver<JobResult>, Busy> {
        self.queue.try_submit(job)
    }

    /// What the queue has done.
    pub fn stats(&self) -> &BatchStats {
        &self.stats
    }
}

/// The model as the queue runs it: one padded generation call per batch, on a blocking
/// thread (ONNX Runtime's `run` is synchronous and needs `&mut` on its session).
struct Generator {
    model: Arc<Mutex<Model>>,
    stats: Arc<BatchStats>,
}

impl BatchRunner for Generator {
    type Request = Job;
    type Answer = Done;
    type Error = JobError;

    // Requests share a generation call only with equal settings (seeds may differ).
    fn compatible(&self, first: &Job, other: &Job) -> bool {
        first.params == other.params
    }

    fn run(&self, batch: Vec<Job>) -> BoxFuture<'_, Result<Vec<JobResult>, JobError>> {
        let model = self.model.clone();
        let stats = self.stats.clone();
        async move {
            tokio::task::spawn_blocking(move || Ok(generate(&model, batch, &stats)))
                .await
                .map_err(|e| JobError::Model(format!("generation thread failed: {e}")))?
        }
        .boxed()
    }

    fn miscounted(&self, answered: usize, asked: usize) -> JobError {
        JobError::Model(format!("generated {answered} of {asked} requests"))
    }
}

/// One answer per job, in order: jobs whose prompt cannot be built fail alone.
fn generate(model: &Mutex<Model>, batch: Vec<Job>, stats: &BatchStats) -> Vec<JobResult> {
    let Some(params) = batch.first().map(|j| j.params.clone()) else {
        return Vec::new();
    };
    // A poisoned lock means a panic elsewhere mid-generation; the model itself holds no
    // state between calls, so keep serving.
    let mut m = model.lock().unwrap_or_else(|p| p.into_inner());
    let mut results: Vec<Option<JobResult>> = Vec::with_capacity(batch.len());
    let mut prompts = Vec::new();
    let mut seeds = Vec::new();
    let mut waiting = Vec::new();
    for job in batch {
        let built =
            template::render_messages(&m.config().chat_template, &job.messages).and_then(|text| {
                let p = expand_images(&text, &job.images, m.config()).map_err(|e| e.to_string())?;
                let n = m.encode(&p.text).map_err(|e| e.to_string())?.len();
                Ok((p, n))
            });
        match built {
            Ok((mut p, n)) => {
                p.grammar = job.grammar;
                prompts.push(p);
                seeds.push(job.seed);
                waiting.push((results.len(), n, job.pieces));
                results.push(None);
            }
            Err(e) => results.push(Some(Err(JobError::Request(e)))),
        }
    }
    if !prompts.is_empty() {
        stats.record(prompts.len());
        match m.generate(&prompts, &params, &seeds) {
            Ok(out) => {
                for ((at, n, want_pieces), g) in waiting.into_iter().zip(out) {
                    let pieces = if want_pieces {
                        g.tokens.iter().map(|&t| m.token_text(t)).collect()
                    } else {
                        Vec::new()
                    };
                    results[at] = Some(Ok(Done {
                        generation: g,
                        prompt_tokens: n,
                        pieces,
                    }));
                }
            }
            Err(e) => {
                let message = e.to_string();
                for (at, _, _) in waiting {
                    results[at] = Some(Err(JobError::Model(message.clone())));
                }
            }
        }
    }
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(JobError::Model("no generation".into()))))
        .collect()
}
