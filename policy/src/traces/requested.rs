//! A step recorded by a policy served over HTTP, as a trainer outside surfgym needs it:
//! the user message exactly as the request carried it (the screenshots first, as the
//! policy attached them, then the stored text) and the reply, with the generated tokens'
//! ids and log-probabilities when the server reported them. Nothing is re-tokenised: the
//! server applied its own chat template, which surfgym never saw, so there are no prompt
//! ids to give.
//!
//! The screenshots (none for a text-only model) are the step's and, when the policy showed several (`images` on its
//! card), the steps' before it that recorded one, oldest first; marks are drawn again
//! from the stored elements as the policy drew them.

use image::DynamicImage;

use super::replay::{Screenshots, failing, step_and_card};
use super::{TraceEpisode, TraceError};
use crate::output::Grounding;

/// See the module documentation.
pub struct Requested {
    /// The user message's text.
    pub text: String,
    /// The images sent before it, oldest first.
    pub images: Vec<DynamicImage>,
    /// The reply.
    pub completion: String,
    /// The generated tokens' ids (empty when the server reported none).
    pub token_ids: Vec<u32>,
    /// Their log-probabilities, one per id (empty with them).
    pub logprobs: Vec<f32>,
}

/// Step `index` of `ep` as its HTTP policy requested it.
pub async fn requested(
    screens: &mut Screenshots,
    ep: &TraceEpisode,
    index: usize,
) -> Result<Requested, TraceError> {
    let fail = failing(ep, index);
    let (step, card) = step_and_card(ep, index)?;
    if card.backend != "http" {
        return Err(fail(format!(
            "recorded by the `{}` policy ({}), not one served over HTTP",
            card.name, card.backend
        )));
    }
    let grounding = match card.settings.get("grounding").and_then(|v| v.as_str()) {
        Some("coordinates") => Grounding::Coordinates,
        Some("marks") | None => Grounding::Marks,
        Some(other) => {
            return Err(fail(format!(
                "the policy card's grounding {other:?} is unknown"
            )));
        }
    };
    // A text-only model was sent no screenshot (cards from before the setting existed
    // are of models that were sent them).
    let vision = card
        .settings
        .get("vision")
        .and_then(|v| v.as_bool())
        .unwrap_or(true);
    let shown = card
        .settings
        .get("images")
        .and_then(|v| v.as_u64())
        .unwrap_or(1)
        .max(1) as usize;
    let text = step
        .prompt
        .clone()
        .ok_or_else(|| fail("no prompt recorded".into()))?;
    let completion = step
        .raw_output
        .clone()
        .ok_or_else(|| fail("no reply recorded".into()))?;
    let (token_ids, logprobs) = step
        .tokens()
        .map(|(ids, lps)| (ids, lps.to_vec()))
        .unwrap_or_default();
    let mut images = Vec::new();
    if !vision {
        return Ok(Requested {
            text,
            images,
            completion,
            token_ids,
            logprobs,
        });
    }
    let earlier = (0..index)
        .rev()
        .filter(|&j| ep.steps[j].screenshot.is_some())
        .take(shown - 1)
        .collect::<Vec<_>>();
    for j in earlier.into_iter().rev().chain([index]) {
        images.push(screens.shown(ep, j, grounding).await.map_err(&fail)?);
    }
    Ok(Requested {
        text,
        images,
        completion,
        token_ids,
        logprobs,
    })
}
