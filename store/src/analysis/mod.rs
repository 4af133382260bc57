//! Campaign analysis read models: per-task aggregates with pass@k, breakdowns by a task
//! attribute, a searchable and sortable page of episodes, what the plots draw, and two
//! campaigns compared task by task. Every aggregate over episodes or steps is a `GROUP BY`
//! in Postgres (or read from the per-campaign tables triggers keep, migrations 0019 and
//! 0021), so a campaign's episodes are never loaded into memory to be counted; only the
//! per-task rows are added up here, into breakdowns. Sort orders come from fixed
//! allow-lists and every user string is a bind.

mod compare;
mod filter;
mod latency;
mod plots;
mod search;
mod tasks;

pub use compare::{CompareCounts, CompareRow};
pub use filter::{Dimension, EpisodeSearch, EpisodeSort, LatencyPhase, TaskScope, TaskSort};
pub use plots::{LATENCY_EDGES_MS, LatencyBin, LatencySummary, StepsBin, TimeBucket};
pub use tasks::{BreakdownBucket, TaskStats, breakdown};
