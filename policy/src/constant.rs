//! One fixed action at every step, whatever the page or the instruction says: what a
//! policy that does not read can at best learn ("always click element 4"). Evaluated on
//! held-out episodes, the best such action per task is the baseline that tells "learned
//! one action" from "learned to read".

use futures::FutureExt;
use futures::future::BoxFuture;

use browser_pool::Action;

use super::{Decision, Policy, PolicyError, StepInput};

/// The policy that always takes `action`, named `constant:<action>`.
#[derive(Debug, Clone)]
pub struct ConstantPolicy {
    name: String,
    action: Action,
}

impl ConstantPolicy {
    /// What every constant policy's name starts with.
    pub const PREFIX: &'static str = "constant:";

    /// The policy taking `action` at every step.
    pub fn new(action: Action) -> Self {
        Self {
            name: format!("{}{action}", Self::PREFIX),
            action,
        }
    }

    /// The policy taking the action `text` spells (`click(4)`), or why it is none.
    pub fn parse(text: &str) -> Result<Self, String> {
        spaces::parse_action(text)
            .map(Self::new)
            .map_err(|e| e.to_string())
    }

    /// Its action.
    pub fn action(&self) -> &Action {
        &self.action
    }
}

impl Policy for ConstantPolicy {
    fn name(&self) -> &str {
        &self.name
    }

    fn decide(&self, _: StepInput) -> BoxFuture<'_, Result<Decision, PolicyError>> {
        let action = self.action.clone();
        async move { Ok(Decision::action(action, "the same action at every step")) }.boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn its_name_carries_its_action_and_parses_back() {
        let action = spaces::parse_action("click(4)").unwrap();
        let p = ConstantPolicy::new(action.clone());
        assert_eq!(p.name(), "constant:click(4)");
        let back = ConstantPolicy::parse(p.name().strip_prefix(ConstantPolicy::PREFIX).unwrap());
        assert_eq!(back.unwrap().action(), &action);
        assert!(ConstantPolicy::parse("click the red one").is_err());
    }
}
