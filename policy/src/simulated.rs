//! A policy with the latency profile of a remote VLM server: wraps another policy's
//! choices with heavy-tailed (log-normal) delays. Used to measure scheduling (async vs
//! lockstep rollouts) without a GPU; the delay of a request depends only on the episode
//! seed and step, so both modes see exactly the same latencies.

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{Decision, Policy, PolicyError, StepInput};
use store::PolicyCard;

/// Per-request latency: log-normal around a median.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyModel {
    /// Median latency.
    pub median: Duration,
    /// Log-space standard deviation (0.7 gives p99 ≈ 5x median).
    pub sigma: f64,
    /// Fixed cost of a batched call on top of its slowest member.
    pub batch_overhead: Duration,
}

impl LatencyModel {
    /// The latency of one request, a function of `(seed, step)` only.
    pub fn sample(&self, seed: u64, step: u32) -> Duration {
        let mut rng =
            StdRng::seed_from_u64(seed ^ (u64::from(step) + 1).wrapping_mul(0xD1B5_4A32_D192_ED03));
        // Box-Muller.
        let (u1, u2): (f64, f64) = (rng.random::<f64>().max(1e-12), rng.random());
        let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        let factor = (self.sigma * z).exp().min(20.0);
        self.median.mul_f64(factor)
    }
}

/// Another policy's decisions, delivered after a simulated model-server delay.
pub struct SimulatedLatency {
    name: String,
    inner: Arc<dyn Policy>,
    model: LatencyModel,
}

impl SimulatedLatency {
    /// Wraps `inner` under `name`.
    pub fn new(
        name: impl Into<String>,
        inner: Arc<dyn Policy>,
        model: LatencyModel,
    ) -> SimulatedLatency {
        SimulatedLatency {
            name: name.into(),
            inner,
            model,
        }
    }
}

impl Policy for SimulatedLatency {
    fn name(&self) -> &str {
        &self.name
    }

    fn card(&self) -> PolicyCard {
        PolicyCard::new(&self.name, "simulated")
            .with("wraps", self.inner.name())
            .with("median_latency_ms", self.model.median.as_millis() as u64)
            .with("latency_sigma", self.model.sigma)
    }

    /// One request to a continuously batching server: it returns when its own
    /// generation is done.
    fn decide(&self, input: StepInput) -> BoxFuture<'_, Result<Decision, PolicyError>> {
        async move {
            tokio::time::sleep(self.model.sample(input.seed, input.step)).await;
            self.inner.decide(input).await
        }
        .boxed()
    }

    /// One synchronous batch: it returns when its slowest member is done.
    fn decide_batch(
        &self,
        inputs: Vec<StepInput>,
    ) -> BoxFuture<'_, Vec<Result<Decision, PolicyError>>> {
        async move {
            let slowest = inputs
                .iter()
                .map(|i| self.model.sample(i.seed, i.step))
                .max()
                .unwrap_or_default();
            tokio::time::sleep(slowest + self.model.batch_overhead).await;
            futures::future::join_all(inputs.into_iter().map(|i| self.inner.decide(i))).await
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_are_reproducible_and_heavy_tailed() {
        let m = LatencyModel {
            median: Duration::from_millis(100),
            sigma: 0.7,
            batch_overhead: Duration::ZERO,
        };
        assert_eq!(m.sample(7, 3), m.sample(7, 3));
        let mut v: Vec<Duration> = (0..2000).map(|i| m.sample(i, 0)).collect();
        v.sort();
        let (p50, p99) = (v[1000], v[1980]);
        assert!(
            p50 > Duration::from_millis(85) && p50 < Duration::from_millis(115),
            "{p50:?}"
        );
        assert!(p99 > p50 * 3, "p99 {p99:?} vs p50 {p50:?}");
    }
}
