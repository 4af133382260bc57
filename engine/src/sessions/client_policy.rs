//! The policy seat of a session's episode: its actions come from the API client, so this
//! policy only names who decided (on every stored step's card) and is never asked.

use futures::future::BoxFuture;
use policy::{Decision, Policy, PolicyError, StepInput};
use store::PolicyCard;

/// The policy name of every interactive campaign.
pub const CLIENT_POLICY: &str = "client";

/// A session's client, in the policy's seat.
pub(super) struct ClientPolicy {
    client: String,
}

impl ClientPolicy {
    pub(super) fn new(client: &str) -> ClientPolicy {
        ClientPolicy {
            client: client.to_string(),
        }
    }
}

impl Policy for ClientPolicy {
    fn name(&self) -> &str {
        CLIENT_POLICY
    }

    fn decide(&self, _input: StepInput) -> BoxFuture<'_, Result<Decision, PolicyError>> {
        // Sessions apply the client's actions themselves and never ask.
        Box::pin(async {
            Err(PolicyError::Failed(
                "a session's actions come from its API client".into(),
            ))
        })
    }

    fn card(&self) -> PolicyCard {
        let mut card = PolicyCard::new(CLIENT_POLICY, "session");
        card.settings.insert(
            "client".into(),
            serde_json::Value::String(self.client.clone()),
        );
        card
    }
}
