//! A campaign's latency distributions per phase, from counts of whole milliseconds: the
//! steps' counts are kept by triggers (`campaign_step_times`, migration 0021), so a
//! request reads a few thousand rows however many steps the campaign has; the judge's
//! are counted from the campaign's episodes. Percentiles are computed here exactly as
//! Postgres' `percentile_cont` computes them over the samples themselves.

use uuid::Uuid;

use super::filter::LatencyPhase;
use super::plots::{LATENCY_EDGES_MS, LatencyBin, LatencySummary};
use crate::{Store, StoreError};

/// `(phase, ms, samples)`: the steps' times by phase name, then the judge's.
const COUNTS: &str =
    "SELECT (ARRAY['observe', 'policy', 'act'])[phase + 1] AS phase, ms, steps AS n
       FROM campaign_step_times WHERE campaign_id = $1 AND steps > 0
     UNION ALL
     SELECT 'judge', judge_ms, count(*) FROM episodes
       WHERE campaign_id = $1 AND judge_ms IS NOT NULL GROUP BY judge_ms";

/// The quantiles a summary reports.
const QUANTILES: [f64; 4] = [0.25, 0.5, 0.75, 0.95];

/// `percentile_cont(f)` over samples given as `(value, count)` ascending, `total` in all
/// (Postgres: the rows at `floor` and `ceil` of `f × (total − 1)`, interpolated).
fn percentile_cont(counts: &[(i32, i64)], total: i64, f: f64) -> Option<f64> {
    if total <= 0 {
        return None;
    }
    let pos = f * (total - 1) as f64;
    let (first, second) = (pos.floor() as i64, pos.ceil() as i64);
    let at = |row: i64| {
        let mut seen = 0;
        counts.iter().find_map(|(v, n)| {
            seen += n;
            (row < seen).then_some(f64::from(*v))
        })
    };
    let lo = at(first)?;
    if first == second {
        return Some(lo);
    }
    let hi = at(second)?;
    Some(lo + (hi - lo) * (pos - first as f64))
}

/// The histogram over [`LATENCY_EDGES_MS`] (empty bins included): `width_bucket` of each
/// value, below the first edge counted in the first bin.
fn histogram(counts: &[(i32, i64)]) -> Vec<LatencyBin> {
    let mut bins: Vec<LatencyBin> = LATENCY_EDGES_MS
        .iter()
        .enumerate()
        .map(|(i, lo)| LatencyBin {
            lo_ms: *lo,
            hi_ms: LATENCY_EDGES_MS.get(i + 1).copied(),
            count: 0,
        })
        .collect();
    for (v, n) in counts {
        let bucket = LATENCY_EDGES_MS.iter().filter(|e| **e <= *v).count();
        bins[bucket.saturating_sub(1)].count += n;
    }
    bins
}

impl Store {
    /// How long each phase took over a campaign: summary and histogram.
    pub async fn campaign_latency(
        &self,
        campaign: Uuid,
    ) -> Result<Vec<LatencySummary>, StoreError> {
        let counts: Vec<(String, i32, i64)> = sqlx::query_as(&format!("{COUNTS} ORDER BY 1, 2"))
            .bind(campaign)
            .fetch_all(&self.pool)
            .await?;
        Ok(LatencyPhase::ALL
            .iter()
            .map(|(name, _)| {
                let mine: Vec<(i32, i64)> = counts
                    .iter()
                    .filter(|c| c.0 == *name && c.2 > 0)
                    .map(|c| (c.1, c.2))
                    .collect();
                let total: i64 = mine.iter().map(|c| c.1).sum();
                // The sum is exact in an i64 and in an f64 (far below 2^53 ms), so the
                // quotient is the correctly rounded mean, as `avg` gives it.
                let sum: i64 = mine.iter().map(|(v, n)| i64::from(*v) * n).sum();
                let q = |i: usize| percentile_cont(&mine, total, QUANTILES[i]);
                LatencySummary {
                    phase: name,
                    count: total,
                    mean_ms: (total > 0).then(|| sum as f64 / total as f64),
                    p25_ms: q(0),
                    p50_ms: q(1),
                    p75_ms: q(2),
                    p95_ms: q(3),
                    max_ms: mine.last().map(|c| c.0),
                    bins: histogram(&mine),
                }
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition over the samples themselves, one by one.
    fn naive(samples: &[i32], f: f64) -> f64 {
        let mut s = samples.to_vec();
        s.sort();
        let pos = f * (s.len() - 1) as f64;
        let (a, b) = (pos.floor() as usize, pos.ceil() as usize);
        let lo = f64::from(s[a]);
        if a == b {
            lo
        } else {
            lo + (f64::from(s[b]) - lo) * (pos - a as f64)
        }
    }

    #[test]
    fn percentiles_from_counts_are_those_of_the_samples() {
        let samples = [3, 7, 7, 7, 12, 40, 40, 41, 250, 250, 900];
        let mut counts: Vec<(i32, i64)> = Vec::new();
        for s in samples {
            match counts.last_mut() {
                Some((v, n)) if *v == s => *n += 1,
                _ => counts.push((s, 1)),
            }
        }
        for f in [0.0, 0.25, 0.5, 0.75, 0.95, 0.99, 1.0] {
            assert_eq!(
                percentile_cont(&counts, samples.len() as i64, f),
                Some(naive(&samples, f)),
                "{f}"
            );
        }
        assert_eq!(percentile_cont(&[(5, 1)], 1, 0.95), Some(5.0));
        assert_eq!(percentile_cont(&[], 0, 0.5), None);
    }

    #[test]
    fn histogram_bins_by_lower_edge() {
        let bins = histogram(&[
            (0, 2),
            (9, 1),
            (10, 4),
            (29_999, 1),
            (30_000, 3),
            (90_000, 1),
        ]);
        assert_eq!(bins.len(), LATENCY_EDGES_MS.len());
        assert_eq!(bins[0].count, 3);
        assert_eq!(bins[1].count, 4);
        assert_eq!(bins[10].count, 1);
        assert_eq!(bins[11].count, 4);
        assert_eq!(bins[11].hi_ms, None);
        assert_eq!(bins.iter().map(|b| b.count).sum::<i64>(), 12);
    }
}
