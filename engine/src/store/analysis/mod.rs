//! Campaign analysis read models: per-task aggregates with pass@k, breakdowns by a task
//! attribute, a searchable and sortable page of episodes, what the plots draw, and two
//! campaigns compared task by task. Every aggregate is a `GROUP BY` in Postgres, so a
//! campaign's episodes are never loaded into memory to be counted; sort orders come from
//! fixed allow-lists and every user string is a bind.

mod compare;
mod filter;
mod latency;
mod plots;
mod search;
mod tasks;

pub use compare::{CompareCounts, CompareRow};
pub use filter::{Dimension, EpisodeSearch, EpisodeSort, LatencyPhase, TaskScope, TaskSort};
pub use plots::{LATENCY_EDGES_MS, LatencyBin, LatencySummary, StepsBin, TimeBucket};
pub use tasks::{BreakdownBucket, TaskStats};
