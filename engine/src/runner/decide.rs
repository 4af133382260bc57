//! Asking the policy for a step: retries while its backend is unavailable, and, for a
//! policy that wants them, the decision's CSS-selector targets turned into the element
//! numbers its observation listed (demonstrations written in a model's tokens).

use std::time::Duration;

use browser_pool::{Session, Target};

use metrics::METRICS;
use policy::{Decision, Policy, PolicyError, StepInput};

/// Retries after a policy backend was unavailable, before the episode gives up its
/// progress: a policy server that drops a fraction of calls should cost those calls, not
/// whole episodes. Backoff doubles from [`POLICY_BACKOFF`].
pub const POLICY_CALL_RETRIES: u32 = 3;
const POLICY_BACKOFF: Duration = Duration::from_millis(250);

/// Asks `policy`, retrying a backend that is unavailable up to [`POLICY_CALL_RETRIES`]
/// times (unless it retries its own calls); each retry is counted in
/// `surfgym_policy_call_retries_total`.
pub(crate) async fn retrying(
    policy: &dyn policy::Policy,
    input: StepInput,
) -> Result<Decision, PolicyError> {
    if policy.retries_own_calls() {
        return policy.decide(input).await;
    }
    let mut wait = POLICY_BACKOFF;
    for _ in 0..POLICY_CALL_RETRIES {
        match policy.decide(input.clone()).await {
            Err(PolicyError::Unavailable(why)) => {
                tracing::warn!(step = input.step, error = %why, retry_in = ?wait, "policy backend unavailable; retrying the call");
                METRICS.policy_call_retries.inc();
                tokio::time::sleep(wait).await;
                wait *= 2;
            }
            other => return other,
        }
    }
    policy.decide(input).await
}

/// A policy that wants element numbers ([`Policy::wants_numbers`]) gets its
/// decision's selector targets resolved in the page it observed (nothing has acted
/// since, so the numbers are the observation's) and the renumbered decision back.
pub(crate) async fn renumber(
    session: &Session,
    policy: &dyn Policy,
    input: StepInput,
    decision: Result<Decision, PolicyError>,
) -> Result<Decision, PolicyError> {
    let mut d = decision?;
    if !policy.wants_numbers() {
        return Ok(d);
    }
    let Ok(action) = d.action.clone() else {
        return Ok(d);
    };
    let mut selectors = Vec::new();
    let _ = action.clone().map_targets(|t| {
        if let Target::Selector(css) = &t {
            selectors.push(css.clone());
        }
        Ok::<_, ()>(t)
    });
    let mut numbers = std::collections::HashMap::new();
    for css in selectors {
        // A page that cannot answer leaves the selector as it is: the step is still
        // taken, only not in numbers.
        if let Ok(Some(n)) = session.element_number(&css).await {
            numbers.insert(css, n);
        }
    }
    if numbers.is_empty() {
        return Ok(d);
    }
    let renumbered = action.map_targets(|t| {
        Ok::<_, ()>(match t {
            Target::Selector(css) => match numbers.get(&css) {
                Some(n) => Target::Element(*n),
                None => Target::Selector(css),
            },
            t => t,
        })
    });
    if let Ok(a) = renumbered {
        d.action = Ok(a);
        d = policy.renumbered(input, d).await;
    }
    Ok(d)
}
