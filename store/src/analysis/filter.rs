//! What an analysis query may narrow and order by, and how that becomes SQL: filters are
//! binds, orders are chosen from fixed column lists (never text from a request).

use chrono::{DateTime, Utc};
use sqlx::{Postgres, QueryBuilder};

/// Which tasks an aggregate or an episode list covers (all `None`: every task).
#[derive(Debug, Clone, Default)]
pub struct TaskScope {
    /// One task.
    pub task: Option<String>,
    /// Website.
    pub site: Option<String>,
    /// `easy`, `medium` or `hard`.
    pub difficulty: Option<String>,
    /// `train` or `test`.
    pub split: Option<String>,
    /// Tasks carrying this tag.
    pub tag: Option<String>,
}

impl TaskScope {
    /// `AND` clauses over `tasks t` (and `episodes e` for the task id).
    pub(super) fn push(&self, q: &mut QueryBuilder<'_, Postgres>) {
        if let Some(v) = &self.task {
            q.push(" AND e.task_id = ").push_bind(v.clone());
        }
        if let Some(v) = &self.site {
            q.push(" AND t.site = ").push_bind(v.clone());
        }
        if let Some(v) = &self.difficulty {
            q.push(" AND t.difficulty = ").push_bind(v.clone());
        }
        if let Some(v) = &self.split {
            q.push(" AND t.split = ").push_bind(v.clone());
        }
        if let Some(v) = &self.tag {
            q.push(" AND ").push_bind(v.clone()).push(" = ANY(t.tags)");
        }
    }
}

/// How the per-task table is ordered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TaskSort {
    /// Task id.
    #[default]
    Task,
    /// Website.
    Site,
    /// Difficulty (easy < medium < hard).
    Difficulty,
    /// Split.
    Split,
    /// Episodes.
    Episodes,
    /// Success rate.
    SuccessRate,
    /// pass@k.
    PassAtK,
    /// Mean score.
    MeanScore,
    /// Mean steps.
    MeanSteps,
    /// Most common end reason.
    EndReason,
}

impl TaskSort {
    /// Every order by its parameter name.
    pub const ALL: [(&'static str, TaskSort); 10] = [
        ("task", TaskSort::Task),
        ("site", TaskSort::Site),
        ("difficulty", TaskSort::Difficulty),
        ("split", TaskSort::Split),
        ("episodes", TaskSort::Episodes),
        ("success_rate", TaskSort::SuccessRate),
        ("pass_at_k", TaskSort::PassAtK),
        ("mean_score", TaskSort::MeanScore),
        ("mean_steps", TaskSort::MeanSteps),
        ("end_reason", TaskSort::EndReason),
    ];

    pub(super) fn column(self) -> &'static str {
        match self {
            TaskSort::Task => "task_id",
            TaskSort::Site => "site",
            TaskSort::Difficulty => "array_position(ARRAY['easy','medium','hard'], difficulty)",
            TaskSort::Split => "split",
            TaskSort::Episodes => "episodes",
            TaskSort::SuccessRate => "success_rate",
            TaskSort::PassAtK => "pass_at_k",
            TaskSort::MeanScore => "mean_score",
            TaskSort::MeanSteps => "mean_steps",
            TaskSort::EndReason => "end_reason",
        }
    }
}

/// A task attribute to break a campaign's outcomes down by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dimension {
    /// Website.
    Site,
    /// Difficulty.
    Difficulty,
    /// Split.
    Split,
    /// Tag (a task with several tags counts under each).
    Tag,
}

impl Dimension {
    /// Every dimension by name.
    pub const ALL: [(&'static str, Dimension); 4] = [
        ("site", Dimension::Site),
        ("difficulty", Dimension::Difficulty),
        ("split", Dimension::Split),
        ("tag", Dimension::Tag),
    ];

    /// Its name (the filter parameter a bucket links with).
    pub fn name(self) -> &'static str {
        match self {
            Dimension::Site => "site",
            Dimension::Difficulty => "difficulty",
            Dimension::Split => "split",
            Dimension::Tag => "tag",
        }
    }
}

/// How a page of episodes is ordered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EpisodeSort {
    /// Campaign order: task, then rollout.
    #[default]
    Task,
    /// Success (failures first ascending).
    Success,
    /// Score.
    Score,
    /// Steps.
    Steps,
    /// Wall time.
    Duration,
    /// When it finished.
    Finished,
    /// End reason.
    EndReason,
}

impl EpisodeSort {
    /// Every order by its parameter name.
    pub const ALL: [(&'static str, EpisodeSort); 7] = [
        ("task", EpisodeSort::Task),
        ("success", EpisodeSort::Success),
        ("score", EpisodeSort::Score),
        ("steps", EpisodeSort::Steps),
        ("duration", EpisodeSort::Duration),
        ("finished", EpisodeSort::Finished),
        ("end_reason", EpisodeSort::EndReason),
    ];

    pub(super) fn column(self) -> &'static str {
        match self {
            EpisodeSort::Task => "e.task_id",
            EpisodeSort::Success => "e.success",
            EpisodeSort::Score => "e.score",
            EpisodeSort::Steps => "e.steps",
            EpisodeSort::Duration => "e.duration_ms",
            EpisodeSort::Finished => "e.finished_at",
            EpisodeSort::EndReason => "e.end_reason",
        }
    }
}

/// A timed part of an episode: the three of every step, and judging the episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatencyPhase {
    /// Observing the page.
    Observe,
    /// The policy's decision.
    Policy,
    /// Acting and settling.
    Act,
    /// Judging the finished episode (once per episode).
    Judge,
}

impl LatencyPhase {
    /// Every phase by name, in the order an episode goes through them.
    pub const ALL: [(&'static str, LatencyPhase); 4] = [
        ("observe", LatencyPhase::Observe),
        ("policy", LatencyPhase::Policy),
        ("act", LatencyPhase::Act),
        ("judge", LatencyPhase::Judge),
    ];

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            LatencyPhase::Observe => "observe",
            LatencyPhase::Policy => "policy",
            LatencyPhase::Act => "act",
            LatencyPhase::Judge => "judge",
        }
    }

    fn step_column(self) -> Option<&'static str> {
        match self {
            LatencyPhase::Observe => Some("s.observe_ms"),
            LatencyPhase::Policy => Some("s.policy_ms"),
            LatencyPhase::Act => Some("s.act_ms"),
            LatencyPhase::Judge => None,
        }
    }
}

/// Which episodes of a campaign to list, and in what order.
#[derive(Debug, Clone, Default)]
pub struct EpisodeSearch {
    /// Which tasks.
    pub scope: TaskScope,
    /// Text that the instruction, final URL, answer or an error contains (any case).
    pub text: Option<String>,
    /// Judged successful or not.
    pub success: Option<bool>,
    /// Status.
    pub status: Option<crate::EpisodeStatus>,
    /// End reason.
    pub end_reason: Option<String>,
    /// Steps taken, inclusive bounds.
    pub steps: (Option<i32>, Option<i32>),
    /// Finished in `[from, to)`.
    pub finished: (Option<DateTime<Utc>>, Option<DateTime<Utc>>),
    /// Episodes with a step (or, for the judge, a judging) whose phase took `[lo, hi)` ms.
    pub latency: Option<(LatencyPhase, i32, Option<i32>)>,
    /// Order.
    pub sort: EpisodeSort,
    /// Descending.
    pub descending: bool,
}

impl EpisodeSearch {
    /// `AND` clauses over `episodes e JOIN tasks t`.
    pub(super) fn push(&self, q: &mut QueryBuilder<'_, Postgres>) {
        self.scope.push(q);
        if let Some(text) = &self.text {
            // strpos, not LIKE: the user's % and _ are plain characters.
            let cols = [
                "coalesce(e.instruction, t.instruction)",
                "e.final_url",
                "e.final_answer",
                "e.last_error",
                "e.judge_error",
            ];
            q.push(" AND (false");
            for c in cols {
                q.push(format!(" OR strpos(lower({c}), lower("))
                    .push_bind(text.clone())
                    .push(")) > 0");
            }
            q.push(")");
        }
        if let Some(v) = self.success {
            q.push(" AND e.success = ").push_bind(v);
        }
        if let Some(v) = &self.status {
            q.push(" AND e.status = ").push_bind(*v);
        }
        if let Some(v) = &self.end_reason {
            q.push(" AND e.end_reason = ").push_bind(v.clone());
        }
        if let Some(v) = self.steps.0 {
            q.push(" AND e.steps >= ").push_bind(v);
        }
        if let Some(v) = self.steps.1 {
            q.push(" AND e.steps <= ").push_bind(v);
        }
        if let Some(v) = self.finished.0 {
            q.push(" AND e.finished_at >= ").push_bind(v);
        }
        if let Some(v) = self.finished.1 {
            q.push(" AND e.finished_at < ").push_bind(v);
        }
        if let Some((phase, lo, hi)) = self.latency {
            match phase.step_column() {
                Some(col) => {
                    q.push(format!(
                        " AND EXISTS (SELECT 1 FROM steps s WHERE s.episode_id = e.id AND {col} >= "
                    ))
                    .push_bind(lo);
                    if let Some(hi) = hi {
                        q.push(format!(" AND {col} < ")).push_bind(hi);
                    }
                    q.push(")");
                }
                None => {
                    q.push(" AND e.judge_ms >= ").push_bind(lo);
                    if let Some(hi) = hi {
                        q.push(" AND e.judge_ms < ").push_bind(hi);
                    }
                }
            }
        }
    }
}
