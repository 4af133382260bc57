//! What a campaign's plots draw, aggregated by Postgres: outcomes over time, latency
//! distributions per phase, and the steps-per-episode histogram.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use uuid::Uuid;

use super::filter::LatencyPhase;
use crate::store::{Store, StoreError};

/// Edges of the latency histogram's bins, ms (log-spaced: latencies span decades); the
/// last bin is open.
pub const LATENCY_EDGES_MS: [i32; 12] = [
    0, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000,
];

/// Episodes that finished within one slice of a campaign's time.
#[derive(Debug, Clone, Serialize)]
pub struct TimeBucket {
    /// Start (inclusive).
    pub from: DateTime<Utc>,
    /// End (exclusive).
    pub to: DateTime<Utc>,
    /// Episodes finished (judged or not).
    pub finished: i64,
    /// Judged.
    pub judged: i64,
    /// Successful.
    pub successes: i64,
}

/// How long one phase took, in distribution.
#[derive(Debug, Clone, Serialize)]
pub struct LatencySummary {
    /// `observe`, `policy`, `act` or `judge`.
    pub phase: &'static str,
    /// Samples (steps; episodes for the judge).
    pub count: i64,
    /// Mean, ms.
    pub mean_ms: Option<f64>,
    /// Quartiles and tail, ms.
    pub p25_ms: Option<f64>,
    /// Median, ms.
    pub p50_ms: Option<f64>,
    /// Third quartile, ms.
    pub p75_ms: Option<f64>,
    /// 95th percentile, ms.
    pub p95_ms: Option<f64>,
    /// Longest, ms.
    pub max_ms: Option<i32>,
    /// Histogram over [`LATENCY_EDGES_MS`] (empty bins included).
    pub bins: Vec<LatencyBin>,
}

/// One histogram bin.
#[derive(Debug, Clone, Serialize)]
pub struct LatencyBin {
    /// Lower edge, ms (inclusive).
    pub lo_ms: i32,
    /// Upper edge, ms (exclusive; null: open).
    pub hi_ms: Option<i32>,
    /// Samples.
    pub count: i64,
}

/// Finished episodes that took one number of steps.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct StepsBin {
    /// Steps.
    pub steps: i32,
    /// Finished episodes.
    pub episodes: i64,
    /// Successful ones.
    pub successes: i64,
}

/// A phase's samples over a campaign, as one SQL relation `(phase, ms)`.
const SAMPLES: &str = "SELECT v.phase, v.ms FROM episodes e JOIN steps s ON s.episode_id = e.id
       CROSS JOIN LATERAL (VALUES ('observe', s.observe_ms), ('policy', s.policy_ms), ('act', s.act_ms)) AS v(phase, ms)
     WHERE e.campaign_id = $1
   UNION ALL
   SELECT 'judge', e.judge_ms FROM episodes e WHERE e.campaign_id = $1 AND e.judge_ms IS NOT NULL";

impl Store {
    /// A campaign's finished episodes in `buckets` equal slices of the time from its first
    /// to its last finish (none before one finished).
    pub async fn campaign_timeline(
        &self,
        campaign: Uuid,
        buckets: i32,
    ) -> Result<Vec<TimeBucket>, StoreError> {
        let (lo, hi): (Option<DateTime<Utc>>, Option<DateTime<Utc>>) = sqlx::query_as(
            "SELECT min(finished_at), max(finished_at) FROM episodes
             WHERE campaign_id = $1 AND finished_at IS NOT NULL AND status = 'finished'",
        )
        .bind(campaign)
        .fetch_one(&self.pool)
        .await?;
        let (Some(lo), Some(hi)) = (lo, hi) else {
            return Ok(Vec::new());
        };
        let buckets = buckets.max(1);
        // Whole milliseconds, at least one, and the last finish inside the last slice.
        let span = (hi - lo).num_milliseconds() + 1;
        let width = (span + i64::from(buckets) - 1) / i64::from(buckets);
        let width = width.max(1);
        let rows: Vec<(i32, i64, i64, i64)> = sqlx::query_as(
            "SELECT floor(extract(epoch FROM (finished_at - $2)) * 1000 / $3)::int4 AS b,
               count(*), count(*) FILTER (WHERE success IS NOT NULL), count(*) FILTER (WHERE success)
             FROM episodes WHERE campaign_id = $1 AND finished_at IS NOT NULL AND status = 'finished'
             GROUP BY 1 ORDER BY 1",
        )
        .bind(campaign)
        .bind(lo)
        .bind(width as f64)
        .fetch_all(&self.pool)
        .await?;
        let mut out: Vec<TimeBucket> = (0..buckets)
            .map(|b| {
                let from = lo + Duration::milliseconds(width * i64::from(b));
                TimeBucket {
                    from,
                    to: from + Duration::milliseconds(width),
                    finished: 0,
                    judged: 0,
                    successes: 0,
                }
            })
            .collect();
        for (b, finished, judged, successes) in rows {
            let i = usize::try_from(b).unwrap_or(0).min(out.len() - 1);
            out[i].finished += finished;
            out[i].judged += judged;
            out[i].successes += successes;
        }
        Ok(out)
    }

    /// How long each phase took over a campaign: summary and histogram.
    pub async fn campaign_latency(
        &self,
        campaign: Uuid,
    ) -> Result<Vec<LatencySummary>, StoreError> {
        type Row = (String, i64, Option<f64>, Option<Vec<f64>>, Option<i32>);
        let stats: Vec<Row> = sqlx::query_as(&format!(
            "SELECT phase, count(*), avg(ms)::float8,
               percentile_cont(ARRAY[0.25, 0.5, 0.75, 0.95]::float8[]) WITHIN GROUP (ORDER BY ms),
               max(ms)
             FROM ({SAMPLES}) AS p GROUP BY phase"
        ))
        .bind(campaign)
        .fetch_all(&self.pool)
        .await?;
        let bins: Vec<(String, i32, i64)> = sqlx::query_as(&format!(
            "SELECT phase, width_bucket(ms, $2::int4[]), count(*) FROM ({SAMPLES}) AS p GROUP BY 1, 2"
        ))
        .bind(campaign)
        .bind(LATENCY_EDGES_MS.to_vec())
        .fetch_all(&self.pool)
        .await?;
        Ok(LatencyPhase::ALL
            .iter()
            .map(|(name, _)| {
                let row = stats.iter().find(|r| r.0 == *name);
                let q = |i: usize| {
                    row.and_then(|r| r.3.as_ref())
                        .and_then(|v| v.get(i).copied())
                };
                let mut hist: Vec<LatencyBin> = LATENCY_EDGES_MS
                    .iter()
                    .enumerate()
                    .map(|(i, lo)| LatencyBin {
                        lo_ms: *lo,
                        hi_ms: LATENCY_EDGES_MS.get(i + 1).copied(),
                        count: 0,
                    })
                    .collect();
                // width_bucket: 1 for the first bin, 0 below the first edge (negative
                // times never happen; counted in the first bin all the same).
                for (_, b, n) in bins.iter().filter(|b| b.0 == *name) {
                    let i = usize::try_from(*b - 1).unwrap_or(0).min(hist.len() - 1);
                    hist[i].count += n;
                }
                LatencySummary {
                    phase: name,
                    count: row.map_or(0, |r| r.1),
                    mean_ms: row.and_then(|r| r.2),
                    p25_ms: q(0),
                    p50_ms: q(1),
                    p75_ms: q(2),
                    p95_ms: q(3),
                    max_ms: row.and_then(|r| r.4),
                    bins: hist,
                }
            })
            .collect())
    }

    /// A campaign's finished episodes by the steps they took.
    pub async fn campaign_steps_histogram(
        &self,
        campaign: Uuid,
    ) -> Result<Vec<StepsBin>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT steps, count(*) AS episodes, count(*) FILTER (WHERE success) AS successes
             FROM episodes WHERE campaign_id = $1 AND status = 'finished'
             GROUP BY steps ORDER BY steps",
        )
        .bind(campaign)
        .fetch_all(&self.pool)
        .await?)
    }
}
