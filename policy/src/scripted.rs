//! Replays a task's reference solution: proves that sites, actions and rubrics agree.

use futures::FutureExt;
use futures::future::BoxFuture;

use browser_pool::Action;

use super::{Decision, Policy, PolicyError, StepInput};

/// The `scripted` policy: step i plays the i-th reference action, then stops (or, asked to
/// re-check an answer, gives it again).
#[derive(Debug, Clone, Copy, Default)]
pub struct ScriptedPolicy;

impl Policy for ScriptedPolicy {
    fn name(&self) -> &str {
        "scripted"
    }

    fn decide(&self, input: StepInput) -> BoxFuture<'_, Result<Decision, PolicyError>> {
        let solution = &input.task.reference_solution;
        let i = input.step as usize;
        let decision = match solution.get(i) {
            Some(a) => Decision::action(
                a.clone(),
                format!("reference step {} of {}", i + 1, solution.len()),
            ),
            // Asked to check its answer again (`answer_checks` > 1): it confirms it.
            None if input.answered.is_some() => Decision::action(
                Action::Answer(input.answered.as_deref().unwrap_or_default().to_string()),
                "the reference answer, confirmed",
            ),
            None if solution.is_empty() => {
                Decision::action(Action::Stop, "the task has no reference solution")
            }
            None => Decision::action(Action::Stop, "reference solution finished"),
        };
        async move { Ok(decision) }.boxed()
    }
}
