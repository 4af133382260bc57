//! A web task: where to start, what to do, how success is judged.

use std::fmt;

use rubrics::{Rubric, RubricSpec};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use spaces::{Action, Screen};
use url::Url;

use crate::audit::{Audit, AuditSpec};

/// A task identifier: 1-128 lower-case letters, digits, `-`, `_`, `.`; starts alphanumeric.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TaskId(String);

impl TaskId {
    /// Checks and wraps an id.
    pub fn parse(s: &str) -> Result<TaskId, String> {
        let ok = !s.is_empty()
            && s.len() <= 128
            && s.chars()
                .next()
                .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            && s.chars().all(|c| {
                c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.')
            });
        if ok {
            Ok(TaskId(s.to_string()))
        } else {
            Err("use 1-128 lower-case letters, digits, `-`, `_` or `.`, starting with a letter or digit".into())
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for TaskId {
    type Error = String;
    fn try_from(s: String) -> Result<TaskId, String> {
        TaskId::parse(&s)
    }
}

impl From<TaskId> for String {
    fn from(id: TaskId) -> String {
        id.0
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// How hard a task is; by default set by its number of rubric facts (WebGym's bands).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Difficulty {
    /// 1-3 facts.
    Easy,
    /// 4-6 facts.
    Medium,
    /// 7 or more facts.
    Hard,
}

impl Difficulty {
    /// The band a number of facts falls in.
    pub fn from_fact_count(n: usize) -> Difficulty {
        match n {
            0..=3 => Difficulty::Easy,
            4..=6 => Difficulty::Medium,
            _ => Difficulty::Hard,
        }
    }

    /// Name as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Difficulty::Easy => "easy",
            Difficulty::Medium => "medium",
            Difficulty::Hard => "hard",
        }
    }

    /// Parses a stored name.
    pub fn parse(s: &str) -> Option<Difficulty> {
        match s {
            "easy" => Some(Difficulty::Easy),
            "medium" => Some(Difficulty::Medium),
            "hard" => Some(Difficulty::Hard),
            _ => None,
        }
    }
}

/// Train or test. Assigned per website, so that no website appears in both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    /// Used for training.
    Train,
    /// Held out for evaluation on unseen websites.
    Test,
}

impl Split {
    /// The default split of a website: a stable hash puts about 20% of sites in test.
    pub fn for_site(site: &str) -> Split {
        let h = Sha256::digest(site.as_bytes());
        if h[0] < 52 { Split::Test } else { Split::Train }
    }

    /// Name as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Split::Train => "train",
            Split::Test => "test",
        }
    }

    /// Parses a stored name.
    pub fn parse(s: &str) -> Option<Split> {
        match s {
            "train" => Some(Split::Train),
            "test" => Some(Split::Test),
            _ => None,
        }
    }
}

/// A task as users write it (JSON): every field optional so that validation, not the
/// deserializer, names what is missing.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    /// Identifier (default: derived from site, instruction and start URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Website name (default: host of the start URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<String>,
    /// What the agent is asked to do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instruction: Option<String>,
    /// Where the episode starts (http or https).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_url: Option<String>,
    /// The rubric (see `docs/reference/formats.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rubric: Option<serde_json::Value>,
    /// `easy`, `medium` or `hard` (default: from the number of facts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difficulty: Option<String>,
    /// Free-form labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// `train` or `test` (default: from the site).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<String>,
    /// Step limit for this task (default: the campaign's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// A scripted action sequence that solves the task.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reference_solution: Vec<String>,
    /// The expected final answer, for tasks that ask a question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_answer: Option<String>,
    /// What to do before the episode: `{"type": "miniwob"}` starts a seeded MiniWoB++
    /// episode on the start page, whose utterance becomes the instruction;
    /// `{"type": "actions", "actions": ["goto(...)", "fill(...)", ...]}` prepares the fresh
    /// browser context (logs in, fills a cart, makes a booking to be cancelled) before the
    /// start page opens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<serde_json::Value>,
    /// What the task's pages render at, e.g. `{"width": 332, "height": 214,
    /// "device_scale": 1.5}` (MiniWoB++'s, as BrowserGym renders it); default: the
    /// campaign's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screen: Option<Screen>,
    /// What `surfgym tasks audit` accepts of its findings, and the declared effect of the
    /// reference solution's prefixes and perturbations on each fact (docs/guides/judges.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<AuditSpec>,
}

/// What the runner does before the first observation.
#[derive(Debug, Clone, PartialEq)]
pub enum Setup {
    /// A MiniWoB++ page: `core.startEpisodeReal()` with the episode's seed; the page's
    /// utterance replaces the task's instruction, and the page's `WOB_DONE_GLOBAL` ends the
    /// episode.
    MiniWob,
    /// Actions run in the episode's fresh browser context before it opens the start page,
    /// to put the site in the state the task starts from. They are not steps: the policy
    /// never sees them, and one that fails ends the episode as a setup failure (an
    /// infrastructure failure, never scored).
    Actions(Vec<Action>),
}

/// Most actions a setup may run.
pub const MAX_SETUP_ACTIONS: usize = 50;

/// The setup in `v` (the `setup` field), or the problems with it.
fn parse_setup(v: &serde_json::Value) -> Result<Setup, Vec<FieldError>> {
    const KNOWN: &str = "known: miniwob, actions";
    let one = |field: &str, message: String| Err(vec![FieldError::new(field, message)]);
    let Some(fields) = v.as_object() else {
        return one(
            "setup",
            format!("must be an object with a `type` ({KNOWN})"),
        );
    };
    match fields.get("type").map(|t| t.as_str()) {
        Some(Some("miniwob")) if fields.len() == 1 => Ok(Setup::MiniWob),
        Some(Some("miniwob")) => one("setup", "a miniwob setup takes no other fields".into()),
        Some(Some("actions")) => {
            if let Some(other) = fields
                .keys()
                .find(|k| !["type", "actions"].contains(&k.as_str()))
            {
                return one(
                    &format!("setup.{other}"),
                    "unknown field (an actions setup has `actions`)".into(),
                );
            }
            let Some(lines) = fields.get("actions").and_then(|a| a.as_array()) else {
                return one(
                    "setup.actions",
                    "is required: a list of actions, e.g. [\"goto(\\\"https://site/login\\\")\"]"
                        .into(),
                );
            };
            if lines.is_empty() || lines.len() > MAX_SETUP_ACTIONS {
                return one(
                    "setup.actions",
                    format!(
                        "must hold 1 to {MAX_SETUP_ACTIONS} actions, not {}",
                        lines.len()
                    ),
                );
            }
            let mut errors = Vec::new();
            let mut actions = Vec::new();
            for (i, line) in lines.iter().enumerate() {
                let field = format!("setup.actions[{i}]");
                let Some(line) = line.as_str() else {
                    errors.push(FieldError::new(field, "must be a string"));
                    continue;
                };
                match spaces::parse_action(line) {
                    Ok(a) if a.is_terminal() => errors.push(FieldError::new(
                        field,
                        format!("`{}` ends an episode; a setup only prepares one", a.name()),
                    )),
                    Ok(a) => actions.push(a),
                    Err(e) => errors.push(FieldError::new(field, e.message)),
                }
            }
            if errors.is_empty() {
                Ok(Setup::Actions(actions))
            } else {
                Err(errors)
            }
        }
        Some(Some(other)) => one("setup.type", format!("unknown setup `{other}` ({KNOWN})")),
        Some(None) => one("setup.type", format!("must be a string ({KNOWN})")),
        None => one("setup.type", format!("is required ({KNOWN})")),
    }
}

/// A validated task.
#[derive(Debug, Clone)]
pub struct Task {
    /// Identifier.
    pub id: TaskId,
    /// Website the task runs on.
    pub site: String,
    /// What the agent is asked to do.
    pub instruction: String,
    /// Where the episode starts.
    pub start_url: Url,
    /// How success is judged.
    pub rubric: Rubric,
    /// How hard it is.
    pub difficulty: Difficulty,
    /// Labels.
    pub tags: Vec<String>,
    /// Train or test.
    pub split: Split,
    /// Step limit, if the task sets one.
    pub max_steps: Option<u32>,
    /// Scripted solution (may be empty).
    pub reference_solution: Vec<Action>,
    /// Expected final answer.
    pub reference_answer: Option<String>,
    /// Environment started on the start page.
    pub setup: Option<Setup>,
    /// The screen the task is made for: its episodes render at it whatever the campaign's
    /// screen (a task's page layout, like its step limit, is part of the task).
    pub screen: Option<Screen>,
    /// Accepted audit findings and declared labels (empty when the task has none).
    pub audit: Audit,
}

/// A problem with one field of a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FieldError {
    /// The field's JSON path, e.g. `start_url` or `rubric.groups[0].facts[1].check.regex`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl FieldError {
    fn new(field: impl Into<String>, message: impl Into<String>) -> FieldError {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// The most steps a task may ask for.
pub const MAX_STEPS_LIMIT: u32 = 200;

impl TaskSpec {
    /// Parses JSON into a spec, naming the field of a type error.
    pub fn from_json(value: serde_json::Value) -> Result<TaskSpec, Vec<FieldError>> {
        if !value.is_object() {
            return Err(vec![FieldError::new("", "a task is a JSON object")]);
        }
        if let Some(path) = find_nul(&value, "") {
            return Err(vec![FieldError::new(path, "contains a NUL character")]);
        }
        serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            let field = if path == "." { String::new() } else { path };
            vec![FieldError::new(field, e.into_inner().to_string())]
        })
    }
}

/// Whether an absolute URL writes its host itself: `scheme://host...`.
fn writes_host(url: &str) -> bool {
    url.split_once("://").is_some_and(|(scheme, rest)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            && !rest.is_empty()
            && !rest.starts_with(['/', '\\', '?', '#', '@', ':'])
    })
}

fn text_ok(s: &str) -> bool {
    !s.trim().is_empty()
}

impl TryFrom<TaskSpec> for Task {
    type Error = Vec<FieldError>;

    fn try_from(spec: TaskSpec) -> Result<Task, Vec<FieldError>> {
        let mut errors = Vec::new();
        let instruction = match spec.instruction.as_deref() {
            Some(s) if text_ok(s) && s.len() <= 8000 => s.trim().to_string(),
            Some(s) if text_ok(s) => {
                errors.push(FieldError::new("instruction", "must be at most 8000 bytes"));
                String::new()
            }
            Some(_) => {
                errors.push(FieldError::new("instruction", "must not be empty"));
                String::new()
            }
            None => {
                errors.push(FieldError::new("instruction", "is required"));
                String::new()
            }
        };
        let start_url = match spec.start_url.as_deref().map(str::trim) {
            None => {
                errors.push(FieldError::new("start_url", "is required"));
                None
            }
            // The URL parser repairs `http:///x`, `http:/x` and `http:\\x` into `http://x/`: a
            // host is taken only where the text writes one, after `://`.
            Some(s)
                if matches!(Url::parse(s), Ok(u) if matches!(u.scheme(), "http" | "https"))
                    && !writes_host(s) =>
            {
                errors.push(FieldError::new(
                    "start_url",
                    format!("`{s}` has no host: write it right after `://`"),
                ));
                None
            }
            Some(s) => match Url::parse(s) {
                Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => {
                    Some(u)
                }
                Ok(u) => {
                    errors.push(FieldError::new(
                        "start_url",
                        format!(
                            "must be an http or https URL with a host, not `{}:`",
                            u.scheme()
                        ),
                    ));
                    None
                }
                Err(e) => {
                    errors.push(FieldError::new("start_url", format!("is not a URL: {e}")));
                    None
                }
            },
        };
        let rubric = match spec.rubric {
            None => {
                errors.push(FieldError::new("rubric", "is required"));
                None
            }
            Some(v) => match Rubric::from_json(v) {
                Ok(r) => Some(r),
                Err(es) => {
                    errors.extend(es.into_iter().map(|e| {
                        let field = if e.path.is_empty() {
                            "rubric".to_string()
                        } else {
                            format!("rubric.{}", e.path)
                        };
                        FieldError::new(field, e.message)
                    }));
                    None
                }
            },
        };
        let site = match (&spec.site, &start_url) {
            (Some(s), _) => {
                let ok = !s.is_empty()
                    && s.len() <= 64
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
                if !ok {
                    errors.push(FieldError::new(
                        "site",
                        "use 1-64 letters, digits, `-`, `_`, `.` or `:`",
                    ));
                }
                s.clone()
            }
            (None, Some(u)) => match u.port() {
                Some(p) => format!("{}:{p}", u.host_str().unwrap_or_default()),
                None => u.host_str().unwrap_or_default().to_string(),
            },
            (None, None) => String::new(),
        };
        let difficulty = match spec.difficulty.as_deref() {
            None => rubric
                .as_ref()
                .map(|r| Difficulty::from_fact_count(r.fact_count())),
            Some(d) => match Difficulty::parse(d) {
                Some(d) => Some(d),
                None => {
                    errors.push(FieldError::new(
                        "difficulty",
                        "must be easy, medium or hard",
                    ));
                    None
                }
            },
        };
        let split = match spec.split.as_deref() {
            None => Split::for_site(&site),
            Some(s) => Split::parse(s).unwrap_or_else(|| {
                errors.push(FieldError::new("split", "must be train or test"));
                Split::Train
            }),
        };
        if spec.tags.len() > 32 {
            errors.push(FieldError::new("tags", "at most 32 tags"));
        }
        for (i, t) in spec.tags.iter().enumerate() {
            if t.is_empty() || t.len() > 40 || t.chars().any(char::is_whitespace) {
                errors.push(FieldError::new(
                    format!("tags[{i}]"),
                    "a tag is 1-40 characters without spaces",
                ));
            }
        }
        if let Some(n) = spec.max_steps
            && (n == 0 || n > MAX_STEPS_LIMIT)
        {
            errors.push(FieldError::new(
                "max_steps",
                format!("must be between 1 and {MAX_STEPS_LIMIT}"),
            ));
        }
        if let Some(screen) = &spec.screen {
            for (field, message) in screen.problems() {
                errors.push(FieldError::new(format!("screen.{field}"), message));
            }
        }
        let mut solution = Vec::new();
        for (i, line) in spec.reference_solution.iter().enumerate() {
            match spaces::parse_action(line) {
                Ok(a) => {
                    if a.is_terminal() && i + 1 != spec.reference_solution.len() {
                        errors.push(FieldError::new(
                            format!("reference_solution[{i}]"),
                            format!(
                                "`{}` ends the episode, so it must be the last step",
                                a.name()
                            ),
                        ));
                    }
                    solution.push(a);
                }
                Err(e) => errors.push(FieldError::new(
                    format!("reference_solution[{i}]"),
                    e.message,
                )),
            }
        }
        if let (Some(r), Some(last)) = (&rubric, solution.last())
            && r.needs_answer()
            && !matches!(last, Action::Answer(_))
        {
            errors.push(FieldError::new(
                "reference_solution",
                "the rubric checks the final answer, so the solution must end with answer(\"...\")",
            ));
        }
        if let Some(n) = spec.max_steps
            && !spec.reference_solution.is_empty()
            && (n as usize) < spec.reference_solution.len()
        {
            errors.push(FieldError::new(
                "max_steps",
                format!(
                    "{n} is shorter than the reference solution ({} steps)",
                    spec.reference_solution.len()
                ),
            ));
        }
        let setup = match spec.setup.as_ref().map(parse_setup) {
            None => None,
            Some(Ok(setup)) => Some(setup),
            Some(Err(problems)) => {
                errors.extend(problems);
                None
            }
        };
        let audit = match (&spec.audit, &rubric) {
            (Some(a), Some(r)) => {
                let facts: Vec<&str> = r
                    .groups()
                    .iter()
                    .flat_map(|g| &g.facts)
                    .map(|f| f.id.as_str())
                    .collect();
                crate::audit::validate(a, &facts, &solution, &mut errors)
            }
            _ => Audit::default(),
        };
        let id = match spec.id.as_deref() {
            Some(s) => TaskId::parse(s)
                .map_err(|m| errors.push(FieldError::new("id", m)))
                .ok(),
            None => start_url
                .as_ref()
                .map(|u| derived_id(&site, &instruction, u)),
        };
        if !errors.is_empty() {
            return Err(errors);
        }
        let (Some(id), Some(start_url), Some(rubric), Some(difficulty)) =
            (id, start_url, rubric, difficulty)
        else {
            unreachable!("every missing part pushed an error");
        };
        Ok(Task {
            id,
            site,
            instruction,
            start_url,
            rubric,
            difficulty,
            tags: spec.tags,
            split,
            max_steps: spec.max_steps,
            reference_solution: solution,
            reference_answer: spec.reference_answer,
            setup,
            screen: spec.screen,
            audit,
        })
    }
}

/// A content-derived id, so that importing the same task twice finds the same id.
fn derived_id(site: &str, instruction: &str, url: &Url) -> TaskId {
    let h = Sha256::digest(format!("{site}\n{instruction}\n{url}").as_bytes());
    let hex: String = h.iter().take(5).map(|b| format!("{b:02x}")).collect();
    let prefix: String = site
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(40)
        .collect();
    TaskId::parse(&format!("{}-{hex}", prefix.trim_matches('-')))
        .unwrap_or_else(|_| TaskId(format!("t-{hex}")))
}

impl Task {
    /// The task as JSON-ready spec (what is stored and served); round-trips through `try_from`.
    pub fn to_spec(&self) -> TaskSpec {
        TaskSpec {
            id: Some(self.id.to_string()),
            site: Some(self.site.clone()),
            instruction: Some(self.instruction.clone()),
            start_url: Some(self.start_url.to_string()),
            rubric: Some(serde_json::to_value(self.rubric.spec()).expect("rubric specs serialize")),
            difficulty: Some(self.difficulty.as_str().to_string()),
            tags: self.tags.clone(),
            split: Some(self.split.as_str().to_string()),
            max_steps: self.max_steps,
            reference_solution: self
                .reference_solution
                .iter()
                .map(ToString::to_string)
                .collect(),
            reference_answer: self.reference_answer.clone(),
            setup: self.setup.as_ref().map(|s| match s {
                Setup::MiniWob => serde_json::json!({"type": "miniwob"}),
                Setup::Actions(actions) => serde_json::json!({
                    "type": "actions",
                    "actions": actions.iter().map(ToString::to_string).collect::<Vec<_>>(),
                }),
            }),
            screen: self.screen,
            audit: (self.audit != Audit::default()).then(|| self.audit.to_spec()),
        }
    }

    /// The rubric spec as stored.
    pub fn rubric_spec(&self) -> &RubricSpec {
        self.rubric.spec()
    }
}

/// The path of the first string (or key) containing a NUL character, which no database
/// text column accepts.
pub fn find_nul(v: &serde_json::Value, path: &str) -> Option<String> {
    use serde_json::Value;
    match v {
        Value::String(s) if s.contains('\0') => Some(path.to_string()),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, v)| find_nul(v, &format!("{path}[{i}]"))),
        Value::Object(o) => o.iter().find_map(|(k, v)| {
            let p = if path.is_empty() {
                k.clone()
            } else {
                format!("{path}.{k}")
            };
            if k.contains('\0') {
                Some(p)
            } else {
                find_nul(v, &p)
            }
        }),
        _ => None,
    }
}
