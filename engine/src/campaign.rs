//! Campaign requests: raw (what the API and CLI receive) and validated.

use browser_pool::Screen;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tasks::{Difficulty, FieldError, MAX_STEPS_LIMIT, Split};

use store::TaskFilter;

/// A campaign request as received; every field optional so validation names what is wrong.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CampaignSpec {
    /// Display name (default: policy and time).
    #[serde(default)]
    pub name: Option<String>,
    /// Which tasks to run (default: all).
    #[serde(default)]
    pub tasks: Option<TaskFilter>,
    /// Policy name (default `random`).
    #[serde(default)]
    pub policy: Option<String>,
    /// Episodes per task (default 1).
    #[serde(default)]
    pub rollouts_per_task: Option<u32>,
    /// Rollouts that share one seed, i.e. one task instance (default 1: every rollout its
    /// own seed). With k, rollout r runs seed number r / k and is that instance's sample
    /// r % k, drawn with a sampling seed of its own: a GRPO group compares k answers to the
    /// same instruction on the same page. Must divide `rollouts_per_task`.
    #[serde(default)]
    pub samples_per_seed: Option<u32>,
    /// Step limit per episode, the interaction horizon: caps each task's own limit
    /// (default: each task's own limit, or 15 for tasks without one).
    #[serde(default)]
    pub max_steps: Option<u32>,
    /// Episodes run at once (default: the browser pool's capacity).
    #[serde(default)]
    pub concurrency: Option<u32>,
    /// Seed from which every episode's seed derives (default 0).
    #[serde(default)]
    pub seed: Option<u64>,
    /// Attempts per episode before an infrastructure failure is final (default 3).
    #[serde(default)]
    pub max_attempts: Option<u32>,
    /// `async` (default): every episode runs on its own; `lockstep`: all active episodes
    /// step together, one batched policy call per step (the naive baseline).
    #[serde(default)]
    pub mode: Option<String>,
    /// Once this fraction of episodes is done (e.g. 0.95), the rest get a grace period
    /// and then end as `timeout`; unstarted ones are not run.
    #[serde(default)]
    pub straggler_cutoff: Option<f64>,
    /// The grace period after the cut-off, in seconds (default 30).
    #[serde(default)]
    pub straggler_grace_secs: Option<u64>,
    /// `exhaustive` (default): the model judge verifies every fact; `binary`: it stops at the
    /// first failed group (same success labels, fewer calls, no partial credit).
    #[serde(default)]
    pub judge: Option<String>,
    /// Order model facts by a critic's guess of the likeliest failures (default true).
    #[serde(default)]
    pub critic: Option<bool>,
    /// What the pages of tasks without their own screen render at, e.g. `{"width": 332,
    /// "height": 214, "device_scale": 1.5}` (default: the creating process's browser
    /// options).
    #[serde(default)]
    pub screen: Option<Screen>,
    /// Answers an agent may give per episode (default 1: its first answer ends the
    /// episode). With n > 1, each answer but the n-th is followed by an observation that
    /// quotes it and asks the agent to check the page again (TTI's re-check prompting);
    /// the last answer given is the one judged.
    #[serde(default)]
    pub answer_checks: Option<u32>,
    /// Whether a page of a task's site that turns the agent away (a CAPTCHA, a bot or
    /// login wall, 403, 429) ends the episode as `blocked`, an infrastructure outcome
    /// retried and never scored (default true; false scores such pages as the agent's).
    #[serde(default)]
    pub detect_blocks: Option<bool>,
    /// Ask the model judge to confirm each block the rules find, with the page's
    /// screenshot: a page it does not see as a wall goes on as an ordinary page (default
    /// false). Needs a model judge (`--judge-onnx-model` or `--judge-url`).
    #[serde(default)]
    pub confirm_blocks: Option<bool>,
    /// Record every exchange of the episodes' pages (requests, responses with bodies) into
    /// a recording with the campaign's id, to replay later (default false). Needs browsers
    /// that capture traffic (`--capture-traffic`).
    #[serde(default)]
    pub record: Option<bool>,
    /// Answer every request of the episodes' pages from this recording instead of the
    /// network (a recording campaign's id, or an imported HAR's).
    #[serde(default)]
    pub replay: Option<uuid::Uuid>,
    /// What a replay does with a request its recording lacks: `fail` (default, as if
    /// offline), `not_found` (a 404 page) or `network` (let it through).
    #[serde(default)]
    pub replay_unmatched: Option<String>,
    /// Domains the episodes' pages may load documents from (pages, frames, popups), each
    /// with its subdomains; a navigation elsewhere is refused before it leaves the browser
    /// (default: any the process's URL policy allows). Every task's start page must be on
    /// one of them.
    #[serde(default)]
    pub allowed_domains: Option<Vec<String>>,
}

/// How a campaign schedules its episodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Each episode is an independent state machine; no barriers.
    #[default]
    Async,
    /// Barriers at every step (the naive synchronous baseline, for comparison).
    Lockstep,
}

/// When to cut off the last episodes of a campaign.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stragglers {
    /// Fraction of episodes done that starts the grace period.
    pub cutoff: f64,
    /// Grace period, seconds.
    pub grace_secs: u64,
}

/// A validated campaign configuration, stored with the campaign.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CampaignConfig {
    /// Display name.
    pub name: String,
    /// Which tasks.
    pub tasks: TaskFilter,
    /// Policy name.
    pub policy: String,
    /// Episodes per task.
    pub rollouts_per_task: u32,
    /// Rollouts per seed (1 in campaigns stored before the setting existed).
    #[serde(default = "one")]
    pub samples_per_seed: u32,
    /// Step limit per episode, capping each task's own; `None`: the task's own.
    pub max_steps: Option<u32>,
    /// Episodes run at once (0: as many as the browser pool allows).
    pub concurrency: u32,
    /// Base seed.
    pub seed: u64,
    /// Attempts per episode.
    pub max_attempts: u32,
    /// Scheduling mode.
    #[serde(default)]
    pub mode: Mode,
    /// Straggler cut-off, if any.
    #[serde(default)]
    pub stragglers: Option<Stragglers>,
    /// Model judge stops at the first failed group.
    #[serde(default)]
    pub binary_judge: bool,
    /// Model facts ordered by the critic.
    #[serde(default = "yes")]
    pub critic: bool,
    /// The screen episodes render at, whichever worker runs them, unless their task has
    /// its own (set at creation; `None` only in campaigns stored before it was: each
    /// worker's own options).
    #[serde(default)]
    pub screen: Option<Screen>,
    /// Answers an agent may give per episode; only the last one is judged (1 in campaigns
    /// stored before the setting existed: the first answer ends the episode).
    #[serde(default = "one")]
    pub answer_checks: u32,
    /// Pages that turn the agent away end its episodes as blocked (true in campaigns
    /// stored before the setting existed).
    #[serde(default = "yes")]
    pub detect_blocks: bool,
    /// The model judge confirms each block the rules find (false in campaigns stored
    /// before the setting existed).
    #[serde(default)]
    pub confirm_blocks: bool,
    /// Whether the episodes' traffic is live, recorded, or replayed (live in campaigns
    /// stored before the setting existed).
    #[serde(default)]
    pub traffic: TrafficPlan,
    /// Domains the episodes' pages may load documents from (empty: any).
    #[serde(default)]
    pub allowed_domains: Vec<String>,
}

/// Where a campaign's pages get their answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TrafficPlan {
    /// From the network.
    #[default]
    Live,
    /// From the network, every exchange recorded into the recording with the campaign's id.
    Record,
    /// From a recording.
    Replay {
        /// The recording.
        recording: uuid::Uuid,
        /// What a request it lacks gets.
        unmatched: UnmatchedAnswer,
    },
}

/// What a replay answers a request its recording lacks with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnmatchedAnswer {
    /// Failed, as if offline.
    #[default]
    Fail,
    /// A 404 page.
    NotFound,
    /// Let through to the network.
    Network,
}

impl UnmatchedAnswer {
    /// The browser pool's name for it.
    pub fn to_pool(self) -> browser_pool::Unmatched {
        match self {
            UnmatchedAnswer::Fail => browser_pool::Unmatched::Fail,
            UnmatchedAnswer::NotFound => browser_pool::Unmatched::NotFound,
            UnmatchedAnswer::Network => browser_pool::Unmatched::Network,
        }
    }
}

fn yes() -> bool {
    true
}

fn one() -> u32 {
    1
}

/// Step limit of tasks that set none, when the campaign sets none either.
pub const DEFAULT_MAX_STEPS: u32 = 15;

impl CampaignConfig {
    /// The step limit of one task's episodes: the campaign's horizon caps the task's own.
    pub fn horizon(&self, task_max_steps: Option<u32>) -> u32 {
        match (self.max_steps, task_max_steps) {
            (Some(c), Some(t)) => c.min(t),
            (Some(c), None) => c,
            (None, Some(t)) => t,
            (None, None) => DEFAULT_MAX_STEPS,
        }
    }
}

/// Upper bounds that keep one request from planning a runaway campaign.
pub const MAX_ROLLOUTS: u32 = 256;
/// Most concurrent episodes a campaign may ask for.
pub const MAX_CONCURRENCY: u32 = 512;
/// Most answers an episode may give (each one a step of its horizon anyway).
pub const MAX_ANSWER_CHECKS: u32 = 16;
/// Longest campaign name, in bytes.
pub const MAX_CAMPAIGN_NAME_BYTES: usize = 200;

fn err(field: &str, message: impl Into<String>) -> FieldError {
    FieldError {
        field: field.to_string(),
        message: message.into(),
    }
}

impl CampaignSpec {
    /// Validates against the policies the engine knows.
    pub fn validate(self, policies: &[String]) -> Result<CampaignConfig, Vec<FieldError>> {
        let mut errors = Vec::new();
        let policy = self.policy.unwrap_or_else(|| "random".into());
        if !policies.contains(&policy) {
            errors.push(err(
                "policy",
                format!("unknown policy `{policy}` (known: {})", policies.join(", ")),
            ));
        }
        let in_range = |errors: &mut Vec<FieldError>,
                        field: &str,
                        v: Option<u32>,
                        default: u32,
                        lo: u32,
                        hi: u32| {
            let v = v.unwrap_or(default);
            if v < lo || v > hi {
                errors.push(err(field, format!("must be between {lo} and {hi}")));
            }
            v
        };
        let rollouts_per_task = in_range(
            &mut errors,
            "rollouts_per_task",
            self.rollouts_per_task,
            1,
            1,
            MAX_ROLLOUTS,
        );
        let samples_per_seed = self.samples_per_seed.unwrap_or(1);
        if samples_per_seed == 0 || !rollouts_per_task.is_multiple_of(samples_per_seed) {
            errors.push(err(
                "samples_per_seed",
                format!("must divide rollouts_per_task ({rollouts_per_task}) and be at least 1"),
            ));
        }
        let max_steps = self
            .max_steps
            .map(|m| in_range(&mut errors, "max_steps", Some(m), m, 1, MAX_STEPS_LIMIT));
        let concurrency = in_range(
            &mut errors,
            "concurrency",
            self.concurrency,
            0,
            0,
            MAX_CONCURRENCY,
        );
        let max_attempts = in_range(&mut errors, "max_attempts", self.max_attempts, 3, 1, 20);
        let answer_checks = in_range(
            &mut errors,
            "answer_checks",
            self.answer_checks,
            1,
            1,
            MAX_ANSWER_CHECKS,
        );
        let mode = match self.mode.as_deref() {
            None | Some("async") => Mode::Async,
            Some("lockstep") => Mode::Lockstep,
            Some(other) => {
                errors.push(err(
                    "mode",
                    format!("must be async or lockstep, not `{other}`"),
                ));
                Mode::Async
            }
        };
        let stragglers = match (self.straggler_cutoff, self.straggler_grace_secs) {
            (None, None) => None,
            (None, Some(_)) => {
                errors.push(err(
                    "straggler_grace_secs",
                    "only applies together with straggler_cutoff",
                ));
                None
            }
            (Some(c), grace) => {
                if !(c > 0.0 && c <= 1.0) {
                    errors.push(err("straggler_cutoff", "must be a fraction in (0, 1]"));
                }
                let grace_secs = grace.unwrap_or(30);
                if grace_secs > 86_400 {
                    errors.push(err("straggler_grace_secs", "at most 86400"));
                }
                Some(Stragglers {
                    cutoff: c,
                    grace_secs,
                })
            }
        };
        let binary_judge = match self.judge.as_deref() {
            None | Some("exhaustive") => false,
            Some("binary") => true,
            Some(other) => {
                errors.push(err(
                    "judge",
                    format!("must be exhaustive or binary, not `{other}`"),
                ));
                false
            }
        };
        let traffic = match (self.record.unwrap_or(false), self.replay) {
            (false, None) => TrafficPlan::Live,
            (true, None) => TrafficPlan::Record,
            (false, Some(recording)) => {
                let unmatched = match self.replay_unmatched.as_deref() {
                    None | Some("fail") => UnmatchedAnswer::Fail,
                    Some("not_found") => UnmatchedAnswer::NotFound,
                    Some("network") => UnmatchedAnswer::Network,
                    Some(other) => {
                        errors.push(err(
                            "replay_unmatched",
                            format!("must be fail, not_found or network, not `{other}`"),
                        ));
                        UnmatchedAnswer::Fail
                    }
                };
                TrafficPlan::Replay {
                    recording,
                    unmatched,
                }
            }
            (true, Some(_)) => {
                errors.push(err("record", "a campaign cannot record while it replays"));
                TrafficPlan::Live
            }
        };
        let allowed_domains = self.allowed_domains.unwrap_or_default();
        if allowed_domains.len() > 100 {
            errors.push(err("allowed_domains", "at most 100 domains"));
        }
        let allowed_domains: Vec<String> = allowed_domains
            .into_iter()
            .enumerate()
            .filter_map(|(i, d)| {
                let d = d
                    .trim()
                    .trim_start_matches("*.")
                    .trim_matches('.')
                    .to_ascii_lowercase();
                let valid = !d.is_empty()
                    && d.len() <= 253
                    && d.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
                if !valid {
                    errors.push(err(
                        &format!("allowed_domains[{i}]"),
                        "must be a host name such as shop.example (letters, digits, '-' and '.')",
                    ));
                }
                valid.then_some(d)
            })
            .collect();
        let confirm_blocks = self.confirm_blocks.unwrap_or(false);
        if confirm_blocks && self.detect_blocks == Some(false) {
            errors.push(err(
                "confirm_blocks",
                "needs detect_blocks: the judge confirms the blocks the rules find",
            ));
        }
        if self.replay_unmatched.is_some() && self.replay.is_none() {
            errors.push(err("replay_unmatched", "only applies together with replay"));
        }
        if let Some(screen) = &self.screen {
            for (field, message) in screen.problems() {
                errors.push(err(&format!("screen.{field}"), message));
            }
        }
        let tasks = self.tasks.unwrap_or_default();
        if let Some(d) = &tasks.difficulty
            && Difficulty::parse(d).is_none()
        {
            errors.push(err("tasks.difficulty", "must be easy, medium or hard"));
        }
        if let Some(s) = &tasks.split
            && Split::parse(s).is_none()
        {
            errors.push(err("tasks.split", "must be train or test"));
        }
        let name = match self.name {
            Some(n) if n.trim().is_empty() => {
                errors.push(err("name", "must not be empty"));
                n
            }
            Some(n) if n.len() > MAX_CAMPAIGN_NAME_BYTES => {
                errors.push(err(
                    "name",
                    format!("at most {MAX_CAMPAIGN_NAME_BYTES} bytes"),
                ));
                n
            }
            Some(n) => n.trim().to_string(),
            None => format!(
                "{policy} {}",
                chrono::Utc::now().format("%Y-%m-%d %H:%M:%S")
            ),
        };
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(CampaignConfig {
            name,
            tasks,
            policy,
            rollouts_per_task,
            samples_per_seed,
            max_steps,
            concurrency,
            seed: self.seed.unwrap_or(0),
            max_attempts,
            mode,
            stragglers,
            binary_judge,
            critic: self.critic.unwrap_or(true),
            screen: self.screen,
            answer_checks,
            detect_blocks: self.detect_blocks.unwrap_or(true),
            confirm_blocks,
            traffic,
            allowed_domains,
        })
    }
}

impl CampaignConfig {
    /// Which instance of its task rollout `rollout` runs (its seed's number), and which
    /// sample of that instance it is.
    pub fn instance_of(&self, rollout: u32) -> (u32, u32) {
        let k = self.samples_per_seed.max(1);
        (rollout / k, rollout % k)
    }
}

/// The seed a policy samples an episode's steps with: the episode's own for its first
/// sample (what a campaign of one sample per seed always used), mixed with the sample's
/// index for the others, so the k samples of one instance differ.
pub fn sampling_seed(episode_seed: u64, sample: u32) -> u64 {
    if sample == 0 {
        return episode_seed;
    }
    // SplitMix64's finaliser: nearby indices give unrelated streams.
    let mut z = episode_seed ^ u64::from(sample).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The seed of one episode: a stable function of the campaign seed, task and instance
/// number, so a campaign replays identically.
pub fn episode_seed(campaign_seed: u64, task_id: &str, rollout: u32) -> i64 {
    let h = Sha256::digest(format!("{campaign_seed}/{task_id}/{rollout}").as_bytes());
    let mut b = [0u8; 8];
    b.copy_from_slice(&h[..8]);
    // 53 bits: non-negative in a signed bigint, and exact as a JSON number in JavaScript.
    (u64::from_le_bytes(b) >> 11) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        vec!["random".into(), "scripted".into()]
    }

    #[test]
    fn defaults_and_errors() {
        let c = CampaignSpec::default().validate(&names()).unwrap();
        assert_eq!(
            (
                c.policy.as_str(),
                c.rollouts_per_task,
                c.max_steps,
                c.max_attempts
            ),
            ("random", 1, None, 3)
        );
        assert_eq!(c.answer_checks, 1, "one answer ends an episode by default");
        // Campaigns stored before the setting existed read back with today's behaviour.
        let mut stored = serde_json::to_value(&c).unwrap();
        stored.as_object_mut().unwrap().remove("answer_checks");
        let old: CampaignConfig = serde_json::from_value(stored).unwrap();
        assert_eq!(old.answer_checks, 1);
        let e = CampaignSpec {
            policy: Some("gpt".into()),
            rollouts_per_task: Some(0),
            max_steps: Some(500),
            answer_checks: Some(0),
            tasks: Some(TaskFilter {
                difficulty: Some("insane".into()),
                ..Default::default()
            }),
            ..Default::default()
        }
        .validate(&names())
        .unwrap_err();
        let fields: Vec<_> = e.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "policy",
                "rollouts_per_task",
                "max_steps",
                "answer_checks",
                "tasks.difficulty"
            ]
        );
    }

    #[test]
    fn samples_of_one_instance_share_its_seed_and_differ_in_sampling() {
        let c = CampaignSpec {
            rollouts_per_task: Some(8),
            samples_per_seed: Some(4),
            ..Default::default()
        }
        .validate(&names())
        .unwrap();
        let instances: Vec<(u32, u32)> = (0..8).map(|r| c.instance_of(r)).collect();
        assert_eq!(
            instances,
            [
                (0, 0),
                (0, 1),
                (0, 2),
                (0, 3),
                (1, 0),
                (1, 1),
                (1, 2),
                (1, 3)
            ]
        );
        let seeds: Vec<i64> = instances
            .iter()
            .map(|(i, _)| episode_seed(7, "miniwob.click-tab", *i))
            .collect();
        assert!(seeds[..4].iter().all(|s| *s == seeds[0]));
        assert!(seeds[4..].iter().all(|s| *s == seeds[4]));
        assert_ne!(seeds[0], seeds[4]);
        // The samples of one seed sample differently; the first keeps the episode's seed.
        let base = seeds[0] as u64;
        let sampling: std::collections::BTreeSet<u64> =
            (0..4).map(|k| sampling_seed(base, k)).collect();
        assert_eq!(sampling.len(), 4);
        assert_eq!(sampling_seed(base, 0), base);
        // One sample per seed by default, and in campaigns stored before the setting.
        let one = CampaignSpec::default().validate(&names()).unwrap();
        assert_eq!(one.instance_of(5), (5, 0));
        let mut stored = serde_json::to_value(&one).unwrap();
        stored.as_object_mut().unwrap().remove("samples_per_seed");
        let old: CampaignConfig = serde_json::from_value(stored).unwrap();
        assert_eq!(old.samples_per_seed, 1);
        for (rollouts, k) in [(6, 4), (4, 0)] {
            let e = CampaignSpec {
                rollouts_per_task: Some(rollouts),
                samples_per_seed: Some(k),
                ..Default::default()
            }
            .validate(&names())
            .unwrap_err();
            assert_eq!(e[0].field, "samples_per_seed", "{rollouts} / {k}");
        }
    }

    #[test]
    fn the_campaign_horizon_caps_the_task_limit() {
        let mut c = CampaignSpec::default().validate(&names()).unwrap();
        assert_eq!(
            (c.horizon(None), c.horizon(Some(40))),
            (DEFAULT_MAX_STEPS, 40)
        );
        c.max_steps = Some(10);
        assert_eq!(
            (c.horizon(None), c.horizon(Some(40)), c.horizon(Some(6))),
            (10, 10, 6)
        );
    }

    #[test]
    fn seeds_are_stable_and_distinct() {
        assert_eq!(episode_seed(7, "a", 0), episode_seed(7, "a", 0));
        assert_ne!(episode_seed(7, "a", 0), episode_seed(7, "a", 1));
        assert_ne!(episode_seed(7, "a", 0), episode_seed(8, "a", 0));
        assert!((0..1i64 << 53).contains(&episode_seed(1, "x", 3)));
    }
}
