//! What a campaign's plots draw, aggregated by Postgres: outcomes over time and the
//! steps-per-episode histogram (latency distributions per phase: `latency`).

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::state::EpisodeStatus;
use crate::{Store, StoreError};

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
             WHERE campaign_id = $1 AND finished_at IS NOT NULL AND status = $2",
        )
        .bind(campaign)
        .bind(EpisodeStatus::Finished)
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
             FROM episodes WHERE campaign_id = $1 AND finished_at IS NOT NULL AND status = $4
             GROUP BY 1 ORDER BY 1",
        )
        .bind(campaign)
        .bind(lo)
        .bind(width as f64)
        .bind(EpisodeStatus::Finished)
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

    /// A campaign's finished episodes by the steps they took.
    pub async fn campaign_steps_histogram(
        &self,
        campaign: Uuid,
    ) -> Result<Vec<StepsBin>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT steps, count(*) AS episodes, count(*) FILTER (WHERE success) AS successes
             FROM episodes WHERE campaign_id = $1 AND status = $2
             GROUP BY steps ORDER BY steps",
        )
        .bind(campaign)
        .bind(EpisodeStatus::Finished)
        .fetch_all(&self.pool)
        .await?)
    }
}
