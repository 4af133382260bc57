//! Process-wide metrics in the Prometheus text format: counters, gauges and latency
//! histograms for the rollout pipeline. A few dozen atomics; no registry crate needed.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

/// A monotonically increasing count.
#[derive(Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds one.
    pub fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
    /// Adds `n`.
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
    /// The count.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A value that goes up and down.
#[derive(Default)]
pub struct Gauge(AtomicI64);

impl Gauge {
    /// Adds `d` (may be negative).
    pub fn add(&self, d: i64) {
        self.0.fetch_add(d, Ordering::Relaxed);
    }
    /// Sets the value.
    pub fn set(&self, v: i64) {
        self.0.store(v, Ordering::Relaxed);
    }
    /// The value.
    pub fn get(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Counts by a label value (e.g. retries by reason).
#[derive(Default)]
pub struct LabeledCounter(Mutex<BTreeMap<String, u64>>);

impl LabeledCounter {
    /// Adds one under `label`.
    pub fn inc(&self, label: &str) {
        *self
            .0
            .lock()
            .expect("metrics lock")
            .entry(label.to_string())
            .or_default() += 1;
    }
    /// The count under `label`.
    pub fn get(&self, label: &str) -> u64 {
        self.0
            .lock()
            .expect("metrics lock")
            .get(label)
            .copied()
            .unwrap_or(0)
    }
}

const BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
];

/// A histogram of durations in seconds (or of plain values, e.g. batch sizes).
pub struct Histogram {
    buckets: &'static [f64],
    counts: Vec<AtomicU64>,
    count: AtomicU64,
    // Sum in millionths, so it fits an atomic integer.
    sum_micros: AtomicU64,
}

impl Histogram {
    fn new(buckets: &'static [f64]) -> Histogram {
        Histogram {
            buckets,
            counts: buckets.iter().map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            sum_micros: AtomicU64::new(0),
        }
    }

    /// Records a value.
    pub fn observe(&self, v: f64) {
        for (i, b) in self.buckets.iter().enumerate() {
            if v <= *b {
                self.counts[i].fetch_add(1, Ordering::Relaxed);
            }
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_micros
            .fetch_add((v.max(0.0) * 1e6) as u64, Ordering::Relaxed);
    }

    /// Records a duration in seconds.
    pub fn time(&self, d: Duration) {
        self.observe(d.as_secs_f64());
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// Sum of recorded values.
    pub fn sum(&self) -> f64 {
        self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6
    }
}

const BATCH_BUCKETS: [f64; 8] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0];

/// Every metric the engine keeps.
pub struct Metrics {
    /// Episodes stored, by outcome (`success`, `failure`).
    pub episodes_finished: LabeledCounter,
    /// Episodes given up after infrastructure failures.
    pub episodes_failed: Counter,
    /// Infrastructure retries, by reason.
    pub retries: LabeledCounter,
    /// Pages of a task's site that turned the agent away, by reason (`captcha`, ...).
    pub episodes_blocked: LabeledCounter,
    /// Policy calls repeated inside an episode because the backend was unavailable.
    pub policy_call_retries: Counter,
    /// Steps taken.
    pub steps: Counter,
    /// Policy outputs that were not valid actions.
    pub parse_failures: Counter,
    /// Observation time per step.
    pub observe_seconds: Histogram,
    /// Policy time per step.
    pub policy_seconds: Histogram,
    /// Act + settle time per step.
    pub act_seconds: Histogram,
    /// Judging time per episode.
    pub judge_seconds: Histogram,
    /// Storage time per episode.
    pub store_seconds: Histogram,
    /// Requests per policy batch.
    pub policy_batch_size: Histogram,
    /// Prompt tokens the ONNX policy prefilled.
    pub prefill_tokens: Counter,
    /// Prompt tokens the ONNX policy did not prefill again: rows of a batch that repeated
    /// another row's prompt took its cache.
    pub prefill_tokens_saved: Counter,
    /// Prompt tokens the ONNX policy took from its prefix cache (an earlier request's
    /// keys and values) instead of prefilling them.
    pub prefill_tokens_cached: Counter,
    /// Prompts the ONNX policy looked up in its prefix cache.
    pub prefix_cache_lookups: Counter,
    /// Prompts that found a cached prefix.
    pub prefix_cache_hits: Counter,
    /// Episodes in a browser right now.
    pub episodes_running: Gauge,
    /// Episodes waiting to be judged.
    pub judge_queue: Gauge,
    /// Episodes waiting to be stored.
    pub store_queue: Gauge,
    /// Policy requests waiting for a batch.
    pub policy_queue: Gauge,
    /// Browser contexts leased.
    pub pool_leased: Gauge,
    /// Browser contexts the pool can lease.
    pub pool_capacity: Gauge,
}

/// The process's metrics.
pub static METRICS: LazyLock<Metrics> = LazyLock::new(|| Metrics {
    episodes_finished: LabeledCounter::default(),
    episodes_failed: Counter::default(),
    retries: LabeledCounter::default(),
    episodes_blocked: LabeledCounter::default(),
    policy_call_retries: Counter::default(),
    steps: Counter::default(),
    parse_failures: Counter::default(),
    observe_seconds: Histogram::new(&BUCKETS),
    policy_seconds: Histogram::new(&BUCKETS),
    act_seconds: Histogram::new(&BUCKETS),
    judge_seconds: Histogram::new(&BUCKETS),
    store_seconds: Histogram::new(&BUCKETS),
    policy_batch_size: Histogram::new(&BATCH_BUCKETS),
    prefill_tokens: Counter::default(),
    prefill_tokens_saved: Counter::default(),
    prefill_tokens_cached: Counter::default(),
    prefix_cache_lookups: Counter::default(),
    prefix_cache_hits: Counter::default(),
    episodes_running: Gauge::default(),
    judge_queue: Gauge::default(),
    store_queue: Gauge::default(),
    policy_queue: Gauge::default(),
    pool_leased: Gauge::default(),
    pool_capacity: Gauge::default(),
});

fn counter(out: &mut String, name: &str, help: &str, v: u64) {
    let _ = writeln!(
        out,
        "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}"
    );
}

fn gauge(out: &mut String, name: &str, help: &str, v: i64) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
}

fn labeled(out: &mut String, name: &str, help: &str, label: &str, c: &LabeledCounter) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
    for (k, v) in c.0.lock().expect("metrics lock").iter() {
        let k = k.replace('\\', "\\\\").replace('"', "\\\"");
        let _ = writeln!(out, "{name}{{{label}=\"{k}\"}} {v}");
    }
}

fn histogram(out: &mut String, name: &str, help: &str, h: &Histogram) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
    for (b, c) in h.buckets.iter().zip(&h.counts) {
        let _ = writeln!(
            out,
            "{name}_bucket{{le=\"{b}\"}} {}",
            c.load(Ordering::Relaxed)
        );
    }
    let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {}", h.count());
    let _ = writeln!(out, "{name}_sum {}\n{name}_count {}", h.sum(), h.count());
}

impl Metrics {
    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut o = String::new();
        labeled(
            &mut o,
            "surfgym_episodes_finished_total",
            "Episodes judged and stored, by outcome.",
            "outcome",
            &self.episodes_finished,
        );
        counter(
            &mut o,
            "surfgym_episodes_failed_total",
            "Episodes given up after infrastructure failures.",
            self.episodes_failed.get(),
        );
        labeled(
            &mut o,
            "surfgym_episode_retries_total",
            "Infrastructure failures retried, by reason.",
            "reason",
            &self.retries,
        );
        labeled(
            &mut o,
            "surfgym_episodes_blocked_total",
            "Episode attempts ended by a page that turned the agent away, by reason.",
            "reason",
            &self.episodes_blocked,
        );
        counter(
            &mut o,
            "surfgym_policy_call_retries_total",
            "Policy calls repeated within an episode after the backend was unavailable.",
            self.policy_call_retries.get(),
        );
        counter(
            &mut o,
            "surfgym_steps_total",
            "Steps taken.",
            self.steps.get(),
        );
        counter(
            &mut o,
            "surfgym_policy_parse_failures_total",
            "Policy outputs that were not valid actions.",
            self.parse_failures.get(),
        );
        histogram(
            &mut o,
            "surfgym_step_observe_seconds",
            "Browser time to observe, per step.",
            &self.observe_seconds,
        );
        histogram(
            &mut o,
            "surfgym_step_policy_seconds",
            "Policy time, per step.",
            &self.policy_seconds,
        );
        histogram(
            &mut o,
            "surfgym_step_act_seconds",
            "Browser time to act and settle, per step.",
            &self.act_seconds,
        );
        histogram(
            &mut o,
            "surfgym_episode_judge_seconds",
            "Judging time, per episode.",
            &self.judge_seconds,
        );
        histogram(
            &mut o,
            "surfgym_episode_store_seconds",
            "Storage time, per episode.",
            &self.store_seconds,
        );
        histogram(
            &mut o,
            "surfgym_policy_batch_size",
            "Requests per batched policy call.",
            &self.policy_batch_size,
        );
        counter(
            &mut o,
            "surfgym_policy_prefill_tokens_total",
            "Prompt tokens the ONNX policy prefilled.",
            self.prefill_tokens.get(),
        );
        counter(
            &mut o,
            "surfgym_policy_prefill_tokens_saved_total",
            "Prompt tokens not prefilled again: batch rows repeating another row's prompt took its cache.",
            self.prefill_tokens_saved.get(),
        );
        counter(
            &mut o,
            "surfgym_policy_prefill_tokens_cached_total",
            "Prompt tokens taken from the prefix cache (an earlier request's) instead of prefilled.",
            self.prefill_tokens_cached.get(),
        );
        counter(
            &mut o,
            "surfgym_policy_prefix_cache_lookups_total",
            "Prompts looked up in the prefix cache.",
            self.prefix_cache_lookups.get(),
        );
        counter(
            &mut o,
            "surfgym_policy_prefix_cache_hits_total",
            "Prompts that found a cached prefix (hit rate: hits / lookups).",
            self.prefix_cache_hits.get(),
        );
        gauge(
            &mut o,
            "surfgym_episodes_running",
            "Episodes in a browser now.",
            self.episodes_running.get(),
        );
        gauge(
            &mut o,
            "surfgym_judge_queue_depth",
            "Episodes waiting to be judged.",
            self.judge_queue.get(),
        );
        gauge(
            &mut o,
            "surfgym_store_queue_depth",
            "Episodes waiting to be stored.",
            self.store_queue.get(),
        );
        gauge(
            &mut o,
            "surfgym_policy_queue_depth",
            "Policy requests waiting for a batch.",
            self.policy_queue.get(),
        );
        gauge(
            &mut o,
            "surfgym_pool_leased",
            "Browser contexts leased.",
            self.pool_leased.get(),
        );
        gauge(
            &mut o,
            "surfgym_pool_capacity",
            "Browser contexts the pool can lease.",
            self.pool_capacity.get(),
        );
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_are_cumulative_and_render() {
        let h = Histogram::new(&BUCKETS);
        h.observe(0.003);
        h.observe(0.3);
        h.observe(1000.0);
        assert_eq!(h.count(), 3);
        assert!((h.sum() - 1000.303).abs() < 1e-6);
        let mut o = String::new();
        histogram(&mut o, "x", "h", &h);
        assert!(o.contains("x_bucket{le=\"0.005\"} 1"));
        assert!(o.contains("x_bucket{le=\"0.5\"} 2"));
        assert!(o.contains("x_bucket{le=\"120\"} 2"));
        assert!(o.contains("x_bucket{le=\"+Inf\"} 3"));
        let c = LabeledCounter::default();
        c.inc("a\"b");
        let mut o = String::new();
        labeled(&mut o, "y", "h", "reason", &c);
        assert!(o.contains("y{reason=\"a\\\"b\"} 1"));
    }
}
