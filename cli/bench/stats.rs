//! Summary statistics the benchmarks print: percentiles, a sample's summary in
//! milliseconds, and the steady rate of a run without its start-up and tail. Arithmetic
//! only: no timing, no I/O.

use std::time::Duration;

use serde::Serialize;

/// Summary of a sample, in milliseconds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Stats {
    pub n: usize,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub min: f64,
    pub max: f64,
}

/// Linear-interpolated percentile (numpy's default), `q` in [0, 1].
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let pos = q * (n - 1) as f64;
            let lo = pos.floor() as usize;
            let hi = pos.ceil() as usize;
            sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
        }
    }
}

/// The `q` quantile by nearest rank (0 for no samples). `bench policy` has always
/// reported these, so its figures stay comparable with the ones recorded before.
pub fn nearest_rank(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// The summary of a sample of milliseconds.
pub fn stats(ms: &[f64]) -> Stats {
    let mut v = ms.to_vec();
    v.sort_by(f64::total_cmp);
    Stats {
        n: v.len(),
        mean: if v.is_empty() {
            f64::NAN
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        },
        p50: percentile(&v, 0.5),
        p90: percentile(&v, 0.9),
        min: v.first().copied().unwrap_or(f64::NAN),
        max: v.last().copied().unwrap_or(f64::NAN),
    }
}

/// A duration in milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Steady throughput: episodes finished between the 10th and 90th percentile of finish
/// times, per hour (start-up and the last stragglers left out).
pub fn steady_per_hour(finish: &[f64]) -> Option<f64> {
    if finish.len() < 5 {
        return None;
    }
    let at = |q: f64| finish[((finish.len() - 1) as f64 * q).round() as usize];
    let (lo, hi) = (at(0.1), at(0.9));
    let n = finish.iter().filter(|&&t| t > lo && t <= hi).count();
    (hi > lo).then(|| n as f64 / (hi - lo) * 3600.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_like_numpy() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 0.5), 2.5);
        assert!((percentile(&v, 0.9) - 3.7).abs() < 1e-9);
        assert!(percentile(&[], 0.5).is_nan());
        let s = stats(&[3.0, 1.0, 2.0]);
        assert_eq!((s.n, s.p50, s.min, s.max), (3, 2.0, 1.0, 3.0));
    }

    #[test]
    fn nearest_rank_picks_a_sample() {
        let v = [10.0, 20.0, 30.0];
        assert_eq!(nearest_rank(&v, 0.5), 20.0);
        assert_eq!(nearest_rank(&v, 0.9), 30.0);
        assert_eq!(nearest_rank(&v, 0.0), 10.0);
        assert_eq!(nearest_rank(&[], 0.5), 0.0);
        assert_eq!(ms(Duration::from_micros(1500)), 1.5);
    }

    #[test]
    fn steady_rate_leaves_out_start_up_and_tail() {
        // One episode a second from t=10 s, with a slow start and a long straggler.
        let mut t: Vec<f64> = (0..100).map(|i| 10.0 + i as f64).collect();
        t.push(500.0);
        let rate = steady_per_hour(&t).unwrap();
        assert!((rate - 3600.0).abs() < 100.0, "{rate}");
        assert_eq!(steady_per_hour(&[1.0, 2.0]), None);
    }
}
