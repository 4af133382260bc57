//! What a synthetic history holds, decided up front and in memory: its tasks, its
//! campaigns, and every episode's outcome and step count. Planning first is what makes
//! the counts exact (the steps asked for are spread over the episodes that finished) and
//! the set reproducible from its seed. Pure: no I/O.

use chrono::{DateTime, Duration, Utc};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use uuid::Uuid;

use super::{HistorySpec, MARK};
use crate::state::{EpisodeStatus, Status};

/// The websites synthetic tasks run on (names only: nothing is served).
pub(super) const SITES: &[&str] = &[
    "shop", "booking", "wiki", "news", "forum", "mail", "maps", "bank",
];
/// The policies synthetic campaigns name. No process registers them, so a scheduler that
/// finds a synthetic campaign `running` leaves it alone.
pub(super) const POLICIES: &[&str] = &[
    "synthetic-smolvlm",
    "synthetic-qwen2vl",
    "synthetic-agent-like",
];

/// One synthetic task.
#[derive(Debug, Clone)]
pub(super) struct PlannedTask {
    pub id: String,
    pub site: &'static str,
    pub difficulty: &'static str,
    pub split: &'static str,
    pub facts: usize,
    pub max_steps: u32,
    /// How often a policy solves it (before the policy's own skill).
    pub ease: f64,
    pub spec: Value,
}

/// One synthetic campaign and the slice of the episode plan that is its.
#[derive(Debug, Clone)]
pub(super) struct PlannedCampaign {
    pub id: Uuid,
    pub name: String,
    pub status: Status,
    pub policy: &'static str,
    pub config: Value,
    pub created_at: DateTime<Utc>,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    pub episodes: std::ops::Range<usize>,
    pub error: Option<String>,
}

/// One synthetic episode: everything its row holds, and how many steps it stores.
#[derive(Debug, Clone)]
pub(super) struct PlannedEpisode {
    pub id: Uuid,
    pub campaign: usize,
    pub task: usize,
    pub rollout: i32,
    pub seed: i64,
    pub status: EpisodeStatus,
    pub end_reason: Option<&'static str>,
    pub success: Option<bool>,
    pub score: Option<f64>,
    pub judge_error: Option<String>,
    pub last_error: Option<String>,
    pub attempts: i32,
    pub steps: i32,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
}

/// The whole plan.
#[derive(Debug)]
pub(super) struct Plan {
    pub tasks: Vec<PlannedTask>,
    pub campaigns: Vec<PlannedCampaign>,
    pub episodes: Vec<PlannedEpisode>,
}

fn task_spec(t: &PlannedTask, n: usize) -> Value {
    let facts: Vec<Value> = (0..t.facts)
        .map(|i| {
            json!({
                "id": format!("f{i}"),
                "description": format!("the page shows item {n}-{i}"),
                "weight": 1,
                "check": {"type": "url", "contains": format!("item-{n}-{i}"), "scope": "any"},
            })
        })
        .collect();
    json!({
        "id": t.id,
        "site": t.site,
        "instruction": format!(
            "On the {} site, find item {n} and report its price (synthetic task {n}).",
            t.site
        ),
        "start_url": format!("http://{}.synthetic.test/", t.site),
        "difficulty": t.difficulty,
        "tags": [MARK, "navigation", if n.is_multiple_of(3) { "form" } else { "info" }],
        "split": t.split,
        "max_steps": t.max_steps,
        "rubric": {"groups": [{"id": "g0", "description": "finds the item", "facts": facts}]},
    })
}

fn plan_tasks(spec: &HistorySpec, rng: &mut StdRng) -> Vec<PlannedTask> {
    (0..spec.tasks as usize)
        .map(|n| {
            let site = SITES[n % SITES.len()];
            let (difficulty, facts, ease) = match rng.random_range(0..10) {
                0..=3 => ("easy", rng.random_range(1..=3), 0.75),
                4..=7 => ("medium", rng.random_range(4..=6), 0.45),
                _ => ("hard", rng.random_range(7..=9), 0.2),
            };
            let mut t = PlannedTask {
                id: format!("{MARK}-{site}-{n:05}"),
                site,
                difficulty,
                split: if n % 5 == 4 { "test" } else { "train" },
                facts,
                max_steps: [10, 15, 20, 30][rng.random_range(0..4)],
                ease: (ease + rng.random_range(-0.15..0.15f64)).clamp(0.02, 0.98),
                spec: Value::Null,
            };
            t.spec = task_spec(&t, n);
            t
        })
        .collect()
}

/// Campaign sizes summing to `total`: one large campaign (a fifth of the history, the
/// per-campaign worst case), the rest of similar size with some spread.
fn sizes(total: usize, campaigns: usize, rng: &mut StdRng) -> Vec<usize> {
    if campaigns <= 1 {
        return vec![total];
    }
    let big = if campaigns >= 5 { total / 5 } else { 0 };
    let rest = total - big;
    let others = campaigns - usize::from(big > 0);
    let weights: Vec<f64> = (0..others).map(|_| rng.random_range(0.5..1.5)).collect();
    let sum: f64 = weights.iter().sum();
    let mut out: Vec<usize> = weights
        .iter()
        .map(|w| ((w / sum) * rest as f64).floor() as usize)
        .collect();
    let short = rest - out.iter().sum::<usize>();
    for i in 0..short {
        out[i % others] += 1;
    }
    if big > 0 {
        // The big one is in the middle of history: not the newest, not the oldest.
        out.insert(campaigns / 2, big);
    }
    out
}

fn campaign_status(i: usize, count: usize) -> Status {
    let newest = count - 1 - i;
    match newest {
        0 if count > 1 => Status::Running,
        1 if count > 2 => Status::Paused,
        _ if i % 17 == 16 => Status::Cancelled,
        _ if i % 41 == 40 => Status::Failed,
        _ => Status::Completed,
    }
}

/// Which status an episode of a campaign in `status` has, `pos` of the way through it.
fn episode_status(status: Status, pos: f64, rng: &mut StdRng) -> EpisodeStatus {
    let infra_failed = rng.random_bool(0.01);
    match status {
        Status::Running if pos > 0.7 => EpisodeStatus::Pending,
        Status::Running if pos > 0.68 => EpisodeStatus::Running,
        Status::Paused if pos > 0.5 => EpisodeStatus::Pending,
        Status::Cancelled if pos > 0.6 => EpisodeStatus::Cancelled,
        Status::Failed if pos > 0.8 => EpisodeStatus::Failed,
        _ if infra_failed => EpisodeStatus::Failed,
        _ => EpisodeStatus::Finished,
    }
}

fn outcome(
    ease: f64,
    skill: f64,
    rng: &mut StdRng,
) -> (&'static str, Option<bool>, Option<f64>, Option<String>) {
    if rng.random_bool(0.005) {
        return (
            "answered",
            None,
            None,
            Some("rubric: fact f0: selector `div[` does not parse".into()),
        );
    }
    if rng.random_bool((ease * skill).clamp(0.0, 1.0)) {
        let reason = if rng.random_bool(0.9) {
            "answered"
        } else {
            "env_done"
        };
        return (reason, Some(true), Some(1.0), None);
    }
    let reason = match rng.random_range(0..100) {
        0..=39 => "answered",
        40..=64 => "max_steps",
        65..=74 => "stopped",
        75..=84 => "policy_error",
        85..=94 => "timeout",
        _ => "env_done",
    };
    let score = (rng.random_range(0..4) as f64) / 4.0;
    (reason, Some(false), Some(score), None)
}

/// Spreads `total` steps over the finished episodes, in proportion to a realistic draw
/// (short for easy tasks, the step limit for `max_steps`), summing exactly to `total`.
fn spread_steps(plan: &mut Plan, total: u64, rng: &mut StdRng) {
    let finished: Vec<usize> = (0..plan.episodes.len())
        .filter(|&i| plan.episodes[i].status == EpisodeStatus::Finished)
        .collect();
    if finished.is_empty() {
        return;
    }
    let raw: Vec<f64> = finished
        .iter()
        .map(|&i| {
            let e = &plan.episodes[i];
            let limit = plan.tasks[e.task].max_steps as f64;
            match e.end_reason {
                Some("max_steps") => limit,
                _ => rng.random_range(0.15..0.9) * limit,
            }
        })
        .collect();
    let sum: f64 = raw.iter().sum();
    let mut given = 0u64;
    let mut counts: Vec<u64> = raw
        .iter()
        .map(|r| {
            let c = ((r / sum) * total as f64).floor().max(1.0) as u64;
            given += c;
            c
        })
        .collect();
    // Rounding leaves a few steps over or under: hand them out (or take them back from
    // episodes with more than one) round the list.
    let mut i = 0;
    while given != total {
        let k = i % counts.len();
        if given < total {
            counts[k] += 1;
            given += 1;
        } else if counts[k] > 1 {
            counts[k] -= 1;
            given -= 1;
        }
        i += 1;
        if i > counts.len() * 4 && given > total && counts.iter().all(|&c| c <= 1) {
            break;
        }
    }
    for (&i, c) in finished.iter().zip(counts) {
        plan.episodes[i].steps = i32::try_from(c).unwrap_or(i32::MAX);
    }
}

/// Plans a history as `spec` asks, from its seed.
pub(super) fn plan(spec: &HistorySpec, now: DateTime<Utc>) -> Plan {
    let mut rng = StdRng::seed_from_u64(spec.seed);
    let tasks = plan_tasks(spec, &mut rng);
    let total = spec.episodes as usize;
    let count = spec.campaigns().min(total.max(1));
    let sizes = sizes(total, count, &mut rng);
    // History spans 90 days, campaigns evenly through it, the newest still going.
    let span = Duration::days(90);
    let mut campaigns = Vec::with_capacity(count);
    let mut episodes = Vec::with_capacity(total);
    for (ci, &size) in sizes.iter().enumerate() {
        let status = campaign_status(ci, count);
        let policy = POLICIES[ci % POLICIES.len()];
        let skill = 0.8 + 0.1 * (ci % POLICIES.len()) as f64;
        let created_at = now - span + span * (ci as i32) / (count as i32);
        // About 2 episodes per second: a campaign's length follows from its size.
        let length = Duration::milliseconds((size as i64).max(1) * 500);
        let started_at = created_at + Duration::seconds(5);
        let ended = !matches!(status, Status::Running | Status::Paused);
        // Enough tasks × rollouts to plan `size` distinct (task, rollout) pairs.
        let rollouts = [1usize, 2, 4, 8, 16][ci % 5].max(size.div_ceil(tasks.len().max(1)));
        let first_task = rng.random_range(0..tasks.len().max(1));
        let first = episodes.len();
        for k in 0..size {
            let task = (first_task + k / rollouts) % tasks.len();
            let rollout = (k % rollouts) as i32;
            let pos = k as f64 / size.max(1) as f64;
            let st = episode_status(status, pos, &mut rng);
            let mut e = PlannedEpisode {
                id: Uuid::from_u128(rng.random()),
                campaign: ci,
                task,
                rollout,
                seed: rng.random_range(0..i64::MAX),
                status: st,
                end_reason: None,
                success: None,
                score: None,
                judge_error: None,
                last_error: None,
                attempts: i32::from(st != EpisodeStatus::Pending && st != EpisodeStatus::Cancelled),
                steps: 0,
                started_at: None,
                finished_at: None,
            };
            let at = started_at + length * (k as i32) / (size.max(1) as i32);
            match st {
                EpisodeStatus::Finished => {
                    let (reason, success, score, judge_error) =
                        outcome(tasks[task].ease, skill, &mut rng);
                    e.end_reason = Some(reason);
                    e.success = success;
                    e.score = score;
                    e.judge_error = judge_error;
                    e.started_at = Some(at);
                }
                EpisodeStatus::Failed => {
                    e.attempts = 3;
                    e.last_error = Some(
                        [
                            "browser: the tab crashed (renderer gone)",
                            "browser: page unresponsive after 30 s",
                            "policy server: connection refused",
                        ][rng.random_range(0..3)]
                        .to_string(),
                    );
                    e.started_at = Some(at);
                    e.finished_at = Some(at + Duration::seconds(40));
                }
                EpisodeStatus::Running => e.started_at = Some(at),
                EpisodeStatus::Cancelled => e.finished_at = Some(started_at + length),
                _ => {}
            }
            episodes.push(e);
        }
        let mut config = json!({
            "name": format!("{MARK} {ci:04}"),
            "tasks": {"tags": MARK},
            "policy": policy,
            "rollouts_per_task": rollouts,
            "max_steps": null,
            "concurrency": 8,
            "seed": spec.seed.wrapping_add(ci as u64),
            "max_attempts": 3,
            "mode": "async",
            "stragglers": null,
            "binary_judge": false,
            "critic": true,
            "screen": {"width": 1280, "height": 720, "device_scale": 1.0, "screenshot_scale": 1.0},
            "answer_checks": 1,
        });
        config[MARK] = Value::Bool(true);
        config["tasks"] = json!({"tag": MARK});
        campaigns.push(PlannedCampaign {
            id: Uuid::from_u128(rng.random()),
            name: format!("{MARK} {ci:04} {policy}"),
            status,
            policy,
            config,
            created_at,
            started_at,
            finished_at: ended.then_some(started_at + length),
            episodes: first..episodes.len(),
            error: (status == Status::Failed).then(|| "synthetic: every browser died".to_string()),
        });
    }
    let mut plan = Plan {
        tasks,
        campaigns,
        episodes,
    };
    spread_steps(
        &mut plan,
        spec.episodes * u64::from(spec.steps_per_episode),
        &mut rng,
    );
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(episodes: u64, m: u32) -> HistorySpec {
        HistorySpec {
            episodes,
            steps_per_episode: m,
            ..HistorySpec::default()
        }
    }

    #[test]
    fn counts_are_exact_and_pairs_distinct() {
        for (n, m) in [(1, 1), (7, 3), (1000, 20), (5003, 11)] {
            let p = plan(&spec(n, m), Utc::now());
            assert_eq!(p.episodes.len() as u64, n);
            let steps: u64 = p.episodes.iter().map(|e| e.steps as u64).sum();
            let finished = p
                .episodes
                .iter()
                .filter(|e| e.status == EpisodeStatus::Finished)
                .count();
            if finished > 0 {
                assert_eq!(steps, n * u64::from(m), "n={n} m={m}");
            }
            let mut keys: Vec<_> = p
                .episodes
                .iter()
                .map(|e| (e.campaign, e.task, e.rollout))
                .collect();
            keys.sort();
            keys.dedup();
            assert_eq!(
                keys.len() as u64,
                n,
                "(campaign, task, rollout) must be unique"
            );
            assert_eq!(
                p.campaigns.iter().map(|c| c.episodes.len()).sum::<usize>() as u64,
                n
            );
        }
    }

    #[test]
    fn the_same_seed_plans_the_same_history() {
        let now = Utc::now();
        let a = plan(&spec(500, 5), now);
        let b = plan(&spec(500, 5), now);
        let ids = |p: &Plan| p.episodes.iter().map(|e| e.id).collect::<Vec<_>>();
        assert_eq!(ids(&a), ids(&b));
    }

    #[test]
    fn synthetic_tasks_validate() {
        let p = plan(&spec(10, 2), Utc::now());
        for t in &p.tasks {
            let s = tasks::TaskSpec::from_json(t.spec.clone()).expect("parses");
            tasks::Task::try_from(s).expect("validates");
        }
    }
}
