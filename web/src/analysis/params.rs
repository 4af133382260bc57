//! The analysis views' query parameters, checked once for the API and the pages alike.
//! Every parameter arrives as text (an empty one, as HTML forms send, means absent) so
//! that each 400 names the parameter it is about.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use store::EpisodeStatus;
use store::analysis::{EpisodeSearch, EpisodeSort, LatencyPhase, TaskScope, TaskSort};
use uuid::Uuid;

use crate::error::{ApiError, field};
use crate::page::MAX_LIMIT;

/// Longest text a filter may hold.
const MAX_TEXT: usize = 500;
/// Furthest a page may start (far past any real campaign; keeps page arithmetic exact).
const MAX_OFFSET: i64 = 1_000_000_000;

/// `GET …/analysis`: which tasks, pass@k's k, and the table's order.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TasksQuery {
    k: Option<String>,
    task: Option<String>,
    site: Option<String>,
    difficulty: Option<String>,
    split: Option<String>,
    tag: Option<String>,
    sort: Option<String>,
    order: Option<String>,
}

/// `GET …/episodes`: search, filters, order and page.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EpisodesQuery {
    q: Option<String>,
    task: Option<String>,
    site: Option<String>,
    difficulty: Option<String>,
    split: Option<String>,
    tag: Option<String>,
    success: Option<String>,
    status: Option<String>,
    end_reason: Option<String>,
    steps_min: Option<String>,
    steps_max: Option<String>,
    from: Option<String>,
    to: Option<String>,
    phase: Option<String>,
    ms_min: Option<String>,
    ms_max: Option<String>,
    sort: Option<String>,
    order: Option<String>,
    limit: Option<String>,
    offset: Option<String>,
}

/// `GET …/plots`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlotsQuery {
    buckets: Option<String>,
}

/// `GET /api/compare` and `/compare`: two campaigns and a page of tasks.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompareQuery {
    a: Option<String>,
    b: Option<String>,
    limit: Option<String>,
    offset: Option<String>,
}

/// `/compare/episodes`: two episodes.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairQuery {
    a: Option<String>,
    b: Option<String>,
}

/// Checked per-task parameters.
#[derive(Debug, Clone)]
pub struct Tasks {
    /// Which tasks.
    pub scope: TaskScope,
    /// pass@k's k (`None`: the campaign's rollouts per task).
    pub k: Option<i64>,
    /// Order.
    pub sort: TaskSort,
    /// Descending.
    pub descending: bool,
}

/// Checked episode-table parameters.
#[derive(Debug, Clone)]
pub struct Episodes {
    /// Filters and order.
    pub search: EpisodeSearch,
    /// Page size.
    pub limit: i64,
    /// Skipped.
    pub offset: i64,
}

/// A parameter with its value, empty as absent, bounded in length.
fn text(name: &str, v: Option<String>) -> Result<Option<String>, ApiError> {
    match v {
        Some(v) if v.is_empty() => Ok(None),
        Some(v) if v.len() > MAX_TEXT => {
            Err(field(name, format!("is longer than {MAX_TEXT} bytes")))
        }
        v => Ok(v),
    }
}

/// One of `allowed`, by name.
/// Every episode status by its word.
fn statuses() -> Vec<(&'static str, EpisodeStatus)> {
    EpisodeStatus::ALL
        .iter()
        .map(|s| (s.as_str(), *s))
        .collect()
}

fn one_of<T: Copy>(
    name: &str,
    v: Option<String>,
    allowed: &[(&'static str, T)],
) -> Result<Option<T>, ApiError> {
    let Some(v) = text(name, v)? else {
        return Ok(None);
    };
    allowed
        .iter()
        .find(|(n, _)| *n == v)
        .map(|(_, t)| Some(*t))
        .ok_or_else(|| {
            let names: Vec<&str> = allowed.iter().map(|(n, _)| *n).collect();
            field(name, format!("must be one of {}", names.join(", ")))
        })
}

fn int(name: &str, v: Option<String>, lo: i64, hi: i64) -> Result<Option<i64>, ApiError> {
    let Some(v) = text(name, v)? else {
        return Ok(None);
    };
    match v.parse::<i64>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(Some(n)),
        _ => Err(field(
            name,
            format!("must be a whole number from {lo} to {hi}"),
        )),
    }
}

fn time(name: &str, v: Option<String>) -> Result<Option<DateTime<Utc>>, ApiError> {
    let Some(v) = text(name, v)? else {
        return Ok(None);
    };
    DateTime::parse_from_rfc3339(&v)
        .map(|t| Some(t.with_timezone(&Utc)))
        .map_err(|_| field(name, "must be an RFC 3339 time (2026-01-31T12:00:00Z)"))
}

fn descending(v: Option<String>, default: bool) -> Result<bool, ApiError> {
    Ok(one_of("order", v, &[("asc", false), ("desc", true)])?.unwrap_or(default))
}

/// A campaign or episode id.
pub fn uuid(name: &str, v: &str, what: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(v).map_err(|_| field(name, format!("is not {what} (a UUID)")))
}

fn scope(
    task: Option<String>,
    site: Option<String>,
    difficulty: Option<String>,
    split: Option<String>,
    tag: Option<String>,
) -> Result<TaskScope, ApiError> {
    let difficulty = one_of(
        "difficulty",
        difficulty,
        &[("easy", "easy"), ("medium", "medium"), ("hard", "hard")],
    )?;
    let split = one_of("split", split, &[("train", "train"), ("test", "test")])?;
    Ok(TaskScope {
        task: text("task", task)?,
        site: text("site", site)?,
        difficulty: difficulty.map(Into::into),
        split: split.map(Into::into),
        tag: text("tag", tag)?,
    })
}

impl TasksQuery {
    /// Checked.
    pub fn checked(self) -> Result<Tasks, ApiError> {
        Ok(Tasks {
            k: int("k", self.k, 1, 10_000)?,
            sort: one_of("sort", self.sort, &TaskSort::ALL)?.unwrap_or_default(),
            descending: descending(self.order, false)?,
            scope: scope(self.task, self.site, self.difficulty, self.split, self.tag)?,
        })
    }
}

/// End reasons an episode can have.
pub const END_REASONS: [(&str, &str); 6] = [
    ("answered", "answered"),
    ("stopped", "stopped"),
    ("max_steps", "max_steps"),
    ("policy_error", "policy_error"),
    ("timeout", "timeout"),
    ("env_done", "env_done"),
];

impl EpisodesQuery {
    /// Checked.
    pub fn checked(self) -> Result<Episodes, ApiError> {
        let steps_min = int("steps_min", self.steps_min, 0, i64::from(i32::MAX))?;
        let steps_max = int("steps_max", self.steps_max, 0, i64::from(i32::MAX))?;
        if let (Some(lo), Some(hi)) = (steps_min, steps_max)
            && lo > hi
        {
            return Err(field("steps_max", "must not be below steps_min"));
        }
        let from = time("from", self.from)?;
        let to = time("to", self.to)?;
        if let (Some(a), Some(b)) = (from, to)
            && a >= b
        {
            return Err(field("to", "must be after from"));
        }
        let phase = one_of("phase", self.phase, &LatencyPhase::ALL)?;
        let ms_min = int("ms_min", self.ms_min, 0, i64::from(i32::MAX))?;
        let ms_max = int("ms_max", self.ms_max, 1, i64::from(i32::MAX))?;
        let latency = match (phase, ms_min, ms_max) {
            (None, None, None) => None,
            (None, _, _) => return Err(field("phase", "is needed with ms_min or ms_max")),
            (Some(_), Some(lo), Some(hi)) if hi <= lo => {
                return Err(field("ms_max", "must be above ms_min"));
            }
            (Some(p), lo, hi) => Some((p, lo.unwrap_or(0) as i32, hi.map(|h| h as i32))),
        };
        let sort = one_of("sort", self.sort, &EpisodeSort::ALL)?.unwrap_or_default();
        Ok(Episodes {
            search: EpisodeSearch {
                scope: scope(self.task, self.site, self.difficulty, self.split, self.tag)?,
                text: text("q", self.q)?,
                success: one_of("success", self.success, &[("true", true), ("false", false)])?,
                status: one_of("status", self.status, &statuses())?,
                end_reason: one_of("end_reason", self.end_reason, &END_REASONS)?.map(Into::into),
                steps: (steps_min.map(|v| v as i32), steps_max.map(|v| v as i32)),
                finished: (from, to),
                latency,
                sort,
                descending: descending(self.order, false)?,
            },
            limit: int("limit", self.limit, 1, MAX_LIMIT)?.unwrap_or(50),
            offset: int("offset", self.offset, 0, MAX_OFFSET)?.unwrap_or(0),
        })
    }
}

impl PlotsQuery {
    /// Time slices of the timeline (default 20).
    pub fn checked(self) -> Result<i32, ApiError> {
        Ok(int("buckets", self.buckets, 1, 200)?.unwrap_or(20) as i32)
    }
}

impl CompareQuery {
    /// `a` as given (the form preselects it when it is alone).
    pub fn a_text(&self) -> Option<String> {
        self.a.clone()
    }

    /// Checked.
    pub fn checked(self) -> Result<Compare, ApiError> {
        let a = text("a", self.a)?;
        let b = text("b", self.b)?;
        let pair = match (a, b) {
            (Some(a), Some(b)) => Some((
                uuid("a", &a, "a campaign id")?,
                uuid("b", &b, "a campaign id")?,
            )),
            _ => None,
        };
        Ok(Compare {
            pair,
            limit: int("limit", self.limit, 1, MAX_LIMIT)?.unwrap_or(MAX_LIMIT),
            offset: int("offset", self.offset, 0, MAX_OFFSET)?.unwrap_or(0),
        })
    }
}

/// Checked compare parameters.
#[derive(Debug, Clone, Copy)]
pub struct Compare {
    /// The two campaigns, or `None` where the form has not named both yet (pages only: the
    /// API needs both).
    pub pair: Option<(Uuid, Uuid)>,
    /// Tasks per page.
    pub limit: i64,
    /// Tasks skipped.
    pub offset: i64,
}

impl PairQuery {
    /// The two episodes.
    pub fn checked(self) -> Result<(Uuid, Uuid), ApiError> {
        let a = text("a", self.a)?.ok_or_else(|| field("a", "is required"))?;
        let b = text("b", self.b)?.ok_or_else(|| field("b", "is required"))?;
        Ok((
            uuid("a", &a, "an episode id")?,
            uuid("b", &b, "an episode id")?,
        ))
    }
}

/// Percent-encodes a query value (everything but unreserved characters).
pub fn enc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            o.push(b as char);
        } else {
            o.push_str(&format!("%{b:02X}"));
        }
    }
    o
}

/// `?k=v&…` from pairs (empty values left out).
pub fn query(pairs: &[(&str, String)]) -> String {
    let parts: Vec<String> = pairs
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}={}", enc(v)))
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("?{}", parts.join("&"))
    }
}

/// The scope as query pairs (to carry filters into links).
pub fn scope_pairs(s: &TaskScope) -> Vec<(&'static str, String)> {
    let o = |v: &Option<String>| v.clone().unwrap_or_default();
    vec![
        ("task", o(&s.task)),
        ("site", o(&s.site)),
        ("difficulty", o(&s.difficulty)),
        ("split", o(&s.split)),
        ("tag", o(&s.tag)),
    ]
}

/// A search as query pairs (without order and page).
pub fn search_pairs(s: &EpisodeSearch) -> Vec<(&'static str, String)> {
    let o = |v: &Option<String>| v.clone().unwrap_or_default();
    let n = |v: Option<i32>| v.map_or(String::new(), |v| v.to_string());
    let t = |v: Option<DateTime<Utc>>| {
        v.map_or(String::new(), |v| {
            v.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
        })
    };
    let mut p = vec![("q", o(&s.text))];
    p.extend(scope_pairs(&s.scope));
    p.extend([
        (
            "success",
            s.success.map_or(String::new(), |v| v.to_string()),
        ),
        ("status", s.status.map_or(String::new(), |v| v.to_string())),
        ("end_reason", o(&s.end_reason)),
        ("steps_min", n(s.steps.0)),
        ("steps_max", n(s.steps.1)),
        ("from", t(s.finished.0)),
        ("to", t(s.finished.1)),
    ]);
    if let Some((phase, lo, hi)) = s.latency {
        p.extend([
            ("phase", phase.name().to_string()),
            ("ms_min", lo.to_string()),
            ("ms_max", n(hi)),
        ]);
    }
    p
}
