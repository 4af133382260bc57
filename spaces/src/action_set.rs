//! Which kinds of action a policy may take: every kind (the default), or a subset such as
//! `["click"]` for MiniWoB++'s click tasks, the way BrowserGym's action subsets narrow its
//! action space. A set narrows the constrained grammar ([`crate::pattern`]) and the
//! prompt's list of actions together, so a small model explores only actions that can
//! matter; it is recorded with each policy so that a trainer rescoring a step masks with
//! the very grammar the step was sampled under.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::action::ACTION_NAMES;

/// A set of action names from [`ACTION_NAMES`], one bit each. Never empty.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ActionSet(u32);

/// A name that is no action, or a set with nothing in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActionSetError {
    /// The name is not in the grammar.
    #[error("{0:?} is no action (actions: {names})", names = ACTION_NAMES.join(", "))]
    Unknown(String),
    /// No name was given.
    #[error("an action set needs at least one action (actions: {names})", names = ACTION_NAMES.join(", "))]
    Empty,
}

impl ActionSet {
    /// Every action of the grammar.
    pub fn all() -> ActionSet {
        ActionSet((1u32 << ACTION_NAMES.len()) - 1)
    }

    /// Exactly the actions named.
    pub fn only<S: AsRef<str>>(
        names: impl IntoIterator<Item = S>,
    ) -> Result<ActionSet, ActionSetError> {
        let mut bits = 0u32;
        for name in names {
            let name = name.as_ref();
            let i = ACTION_NAMES
                .iter()
                .position(|n| *n == name)
                .ok_or_else(|| ActionSetError::Unknown(name.to_string()))?;
            bits |= 1 << i;
        }
        if bits == 0 {
            return Err(ActionSetError::Empty);
        }
        Ok(ActionSet(bits))
    }

    /// Whether the action called `name` is in the set.
    pub fn allows(self, name: &str) -> bool {
        ACTION_NAMES
            .iter()
            .position(|n| *n == name)
            .is_some_and(|i| self.0 & (1 << i) != 0)
    }

    /// Whether every action is in the set (by reference: serde's `skip_serializing_if`
    /// calls it so).
    pub fn is_all(&self) -> bool {
        *self == ActionSet::all()
    }

    /// The names in the set, in the grammar's order.
    pub fn names(self) -> Vec<&'static str> {
        ACTION_NAMES
            .iter()
            .enumerate()
            .filter(|(i, _)| self.0 & (1 << i) != 0)
            .map(|(_, n)| *n)
            .collect()
    }
}

impl Default for ActionSet {
    fn default() -> Self {
        ActionSet::all()
    }
}

impl fmt::Debug for ActionSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.names()).finish()
    }
}

impl Serialize for ActionSet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.names().serialize(s)
    }
}

impl<'de> Deserialize<'de> for ActionSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let names = Vec::<String>::deserialize(d)?;
        ActionSet::only(&names).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_holds_what_it_names_and_reads_back_from_json() {
        let set = ActionSet::only(["click", "type"]).unwrap();
        assert!(set.allows("click") && set.allows("type"));
        assert!(!set.allows("press") && !set.allows("nonsense"));
        assert_eq!(set.names(), ["click", "type"]);
        let json = serde_json::to_string(&set).unwrap();
        assert_eq!(json, r#"["click","type"]"#);
        assert_eq!(serde_json::from_str::<ActionSet>(&json).unwrap(), set);
        assert!(ActionSet::all().is_all() && !set.is_all());
        assert_eq!(ActionSet::all().names(), ACTION_NAMES);
    }

    #[test]
    fn unknown_names_and_empty_sets_are_refused_with_the_list() {
        let e = serde_json::from_str::<ActionSet>(r#"["click", "fly"]"#).unwrap_err();
        assert!(e.to_string().contains("\"fly\" is no action"), "{e}");
        assert!(e.to_string().contains("double_click"), "{e}");
        assert_eq!(
            ActionSet::only(Vec::<String>::new()),
            Err(ActionSetError::Empty)
        );
    }
}
