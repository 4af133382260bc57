//! A demonstration policy: a teacher (the MiniWoB++ solver, a task's reference solution)
//! chooses every action, and each step is recorded as the ONNX student would have taken
//! it: the student's own prompt for that observation, and the teacher's action written
//! as the student's output tokens, with their log-probabilities under the student
//! (teacher-forced, under its grammar when decoding is constrained).
//!
//! That makes a teacher's episode training data for the student, replayed like any of
//! its own steps ([`crate::traces`]): filtered behaviour cloning on it is the warm start
//! WebAgent-R1 runs before RL. The card is the student's (backend `onnx`, its prompt
//! settings) plus the teacher's name, so replays rebuild exactly this prompt and no one
//! mistakes the episodes for the student's own rollouts.
//!
//! A teacher's action the student cannot write (no token path, refused by its grammar,
//! or text that would parse to another action) is still taken, but carries no tokens:
//! the step is not trainable and trace selection leaves it out, saying why.

use std::sync::Arc;

use browser_pool::Action;
use futures::FutureExt;
use futures::future::BoxFuture;

use super::onnx::OnnxBackend;
use super::output::parse_output;
use super::{BatchBackend, Decision, Policy, PolicyError, StepInput};
use store::PolicyCard;

/// See the module documentation.
pub struct Demonstrated {
    name: String,
    teacher: Arc<dyn Policy>,
    student: Arc<OnnxBackend>,
}

/// The student's side of one demonstrated step.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    /// The prompt as rendered (one placeholder per image), what is stored with the step.
    pub prompt: String,
    /// The output text the tokens spell, the answer prefix included.
    pub output: String,
    /// The student's tokens for the action (after the answer prefix).
    pub token_ids: Vec<u32>,
    /// Their teacher-forced log-probabilities under the student.
    pub token_logprobs: Vec<f32>,
}

impl Demonstrated {
    /// `teacher` acting, recorded as `student` would have written it, under `name`.
    pub fn new(
        name: impl Into<String>,
        teacher: Arc<dyn Policy>,
        student: Arc<OnnxBackend>,
    ) -> Demonstrated {
        Demonstrated {
            name: name.into(),
            teacher,
            student,
        }
    }
}

impl OnnxBackend {
    /// `action` on `input`, written as this policy's output: the first spelling that
    /// parses back to the very same action and that the model (and its grammar) gives a
    /// finite log-probability; why none does otherwise.
    pub fn write_action(&self, input: &StepInput, action: &Action) -> Result<Written, String> {
        let prefix = self.answer_prefix();
        let line = action.to_string();
        let viewport = input
            .observation
            .screenshot
            .viewport()
            .unwrap_or(self.viewport());
        // Parsed before the prompt is built: a step whose action cannot be written (a
        // selector target, before the runner renumbers it) costs no rendering.
        let spellings: Vec<String> = [line.clone(), format!(" {line}"), format!("Action: {line}")]
            .into_iter()
            .filter(|text| {
                let (_, parsed) =
                    parse_output(&format!("{prefix}{text}"), self.grounding(), viewport);
                parsed.as_ref() == Ok(action)
            })
            .collect();
        if spellings.is_empty() {
            return Err("no spelling parses back to the action".into());
        }
        let prompt = self.prompt_for(input).map_err(|e| e.to_string())?;
        let model = self.model();
        let mut why = String::from("no spelling has tokens");
        for text in spellings {
            let mut m = model.lock().map_err(|_| "the model lock is poisoned")?;
            let ids = m.encode(&text).map_err(|e| e.to_string())?;
            if ids.is_empty() {
                continue;
            }
            let lps = m.score(&prompt, &ids).map_err(|e| e.to_string())?;
            if lps.iter().all(|l| l.is_finite()) {
                return Ok(Written {
                    prompt: prompt.rendered,
                    output: format!("{prefix}{text}"),
                    token_ids: ids,
                    token_logprobs: lps,
                });
            }
            why = format!("the model's grammar refuses {text:?}");
        }
        Err(why)
    }
}

impl Policy for Demonstrated {
    fn name(&self) -> &str {
        &self.name
    }

    fn card(&self) -> PolicyCard {
        self.student
            .card(&self.name)
            .with("demonstrator", self.teacher.name().to_string())
    }

    fn wants_numbers(&self) -> bool {
        true
    }

    fn renumbered(&self, input: StepInput, decision: Decision) -> BoxFuture<'_, Decision> {
        async move { self.written(input, decision).await }.boxed()
    }

    fn decide(&self, input: StepInput) -> BoxFuture<'_, Result<Decision, PolicyError>> {
        async move {
            let d = self.teacher.decide(input.clone()).await?;
            Ok(self.written(input, d).await)
        }
        .boxed()
    }
}

impl Demonstrated {
    /// The teacher's decision with the student's writing of its action, when it has one.
    async fn written(&self, input: StepInput, mut d: Decision) -> Decision {
        let Ok(action) = d.action.clone() else {
            return d;
        };
        let student = self.student.clone();
        let written = tokio::task::spawn_blocking(move || student.write_action(&input, &action))
            .await
            .unwrap_or_else(|e| Err(format!("scoring stopped: {e}")));
        match written {
            Ok(w) => {
                d.logprob = Some(w.token_logprobs.iter().map(|l| f64::from(*l)).sum());
                d.raw_output = w.output;
                // The student's prompts show earlier thoughts: the teacher's are not
                // what the student would have written, and the text holds none.
                d.thought = None;
                d.prompt = Some(w.prompt);
                d.token_ids = w.token_ids;
                d.token_logprobs = w.token_logprobs;
            }
            Err(why) => {
                tracing::debug!(policy = %self.name, %why, "a demonstrated step carries no tokens");
                d.token_ids.clear();
                d.token_logprobs.clear();
                d.prompt = None;
            }
        }
        d
    }
}
