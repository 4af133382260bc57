//! Cross-request batching for `serve-policy`: concurrent chat requests are collected for
//! up to `max_wait` (at most `max_batch`) and generated as one padded batch, the way the
//! engine's queue batches episodes, so a remote GPU sees full batches.
//!
//! One thread owns the generation loop; handlers hand it jobs through a bounded channel
//! (a full queue answers 503 at once rather than piling up work) and wait on a oneshot.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use engine::metrics::METRICS;
use engine::policy::onnx::grammar::ActionGrammar;
use engine::policy::onnx::{GenParams, Generation, Model, expand_images, prompt};
use serde_json::Value;
use tokio::sync::oneshot;

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

struct Queued {
    job: Job,
    reply: oneshot::Sender<JobResult>,
}

/// What the queue has done, for `/health` and tests.
#[derive(Debug, Default)]
pub struct BatchStats {
    requests: AtomicU64,
    batches: AtomicU64,
    largest: AtomicU64,
}

impl BatchStats {
    /// Requests generated.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
    /// Generation calls made.
    pub fn batches(&self) -> u64 {
        self.batches.load(Ordering::Relaxed)
    }
    /// The largest batch so far.
    pub fn largest(&self) -> u64 {
        self.largest.load(Ordering::Relaxed)
    }
}

/// The queue is full: the client should retry later.
#[derive(Debug, thiserror::Error)]
#[error("the model is busy ({0} requests waiting); retry later")]
pub struct Busy(pub usize);

/// Hands jobs to the generation thread. Cloning shares the queue; the thread ends when
/// the last handle is dropped.
#[derive(Clone)]
pub struct GenerationQueue {
    tx: SyncSender<Queued>,
    capacity: usize,
    stats: Arc<BatchStats>,
}

impl GenerationQueue {
    /// Starts the generation thread over `model` (shared: a judge may use it too).
    pub fn start(model: Arc<Mutex<Model>>, batching: Batching) -> std::io::Result<Self> {
        let capacity = batching.queue_capacity.max(1);
        let (tx, rx) = sync_channel(capacity);
        let stats = Arc::new(BatchStats::default());
        let s = stats.clone();
        std::thread::Builder::new()
            .name("serve-policy-batch".into())
            .spawn(move || run(rx, model, batching, &s))?;
        Ok(GenerationQueue {
            tx,
            capacity,
            stats,
        })
    }

    /// Queues a job; the receiver gets its result.
    pub fn submit(&self, job: Job) -> Result<oneshot::Receiver<JobResult>, Busy> {
        let (reply, rx) = oneshot::channel();
        match self.tx.try_send(Queued { job, reply }) {
            Ok(()) => Ok(rx),
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => Err(Busy(self.capacity)),
        }
    }

    /// What the queue has done.
    pub fn stats(&self) -> &BatchStats {
        &self.stats
    }
}

fn run(rx: Receiver<Queued>, model: Arc<Mutex<Model>>, batching: Batching, stats: &BatchStats) {
    let max_batch = batching.max_batch.max(1);
    let mut pending: VecDeque<Queued> = VecDeque::new();
    loop {
        if pending.is_empty() {
            match rx.recv() {
                Ok(q) => pending.push_back(q),
                Err(_) => return,
            }
        }
        let deadline = Instant::now() + batching.max_wait;
        while pending.len() < max_batch {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(q) => pending.push_back(q),
                Err(RecvTimeoutError::Timeout) => break,
                // Finish what is queued, then stop at the next `recv`.
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        // The oldest request's settings pick the batch (requests share a generation call
        // only with equal settings; seeds may differ); others wait for the next round.
        let params = pending[0].job.params.clone();
        let mut batch = Vec::new();
        let mut rest = VecDeque::new();
        for q in pending.drain(..) {
            if batch.len() < max_batch && q.job.params == params {
                batch.push(q);
            } else {
                rest.push_back(q);
            }
        }
        pending = rest;
        generate(&model, &params, batch, stats);
    }
}

fn generate(model: &Mutex<Model>, params: &GenParams, batch: Vec<Queued>, stats: &BatchStats) {
    // A poisoned lock means a panic elsewhere mid-generation; the model itself holds no
    // state between calls, so keep serving.
    let mut m = model.lock().unwrap_or_else(|p| p.into_inner());
    let mut prompts = Vec::new();
    let mut seeds = Vec::new();
    let mut waiting = Vec::new();
    for q in batch {
        let built =
            prompt::render_messages(&m.config().chat_template, &q.job.messages).and_then(|text| {
                let p =
                    expand_images(&text, &q.job.images, m.config()).map_err(|e| e.to_string())?;
                let n = m.encode(&p.text).map_err(|e| e.to_string())?.len();
                Ok((p, n))
            });
        match built {
            Ok((mut p, n)) => {
                p.grammar = q.job.grammar;
                prompts.push(p);
                seeds.push(q.job.seed);
                waiting.push((q.reply, n, q.job.pieces));
            }
            Err(e) => {
                let _ = q.reply.send(Err(JobError::Request(e)));
            }
        }
    }
    if prompts.is_empty() {
        return;
    }
    let size = prompts.len() as u64;
    stats.requests.fetch_add(size, Ordering::Relaxed);
    stats.batches.fetch_add(1, Ordering::Relaxed);
    stats.largest.fetch_max(size, Ordering::Relaxed);
    METRICS.policy_batch_size.observe(size as f64);
    match m.generate(&prompts, params, &seeds) {
        Ok(out) => {
            for ((reply, n, want_pieces), g) in waiting.into_iter().zip(out) {
                let pieces = if want_pieces {
                    g.tokens.iter().map(|&t| m.token_text(t)).collect()
                } else {
                    Vec::new()
                };
                let _ = reply.send(Ok(Done {
                    generation: g,
                    prompt_tokens: n,
                    pieces,
                }));
            }
        }
        Err(e) => {
            let message = e.to_string();
            for (reply, _, _) in waiting {
                let _ = reply.send(Err(JobError::Model(message.clone())));
            }
        }
    }
}
