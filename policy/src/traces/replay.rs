//! A recorded step's decoder inputs, rebuilt exactly as the ONNX policy had them: the
//! stored prompt text (template applied, nothing re-rendered), the screenshots it showed
//! (marks drawn again from the stored elements, as the policy drew them), the action
//! grammar of that observation under constrained decoding, and the stored token ids.
//! `engine/tests/traces.rs` checks the result against the recorded log-probabilities.

use std::collections::HashMap;
use std::sync::Arc;

use browser_pool::Observation;
use image::DynamicImage;
use inference::grammar::{ActionGrammar, Constraint};
use inference::{Model, TeacherInputs};
use spaces::ActionSet;

use super::{Blobs, TraceEpisode, TraceError};
use crate::output::Grounding;
use store::PolicyCard;

/// How the recording policy built its prompts, as its card says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplaySettings {
    /// Element numbers or grid points.
    pub grounding: Grounding,
    /// Constrained decoding, if it was on.
    pub constraint: Option<Constraint>,
    /// Whether the model read screenshots.
    pub vision: bool,
    /// The kinds of action its grammar allowed.
    pub actions: ActionSet,
}

impl ReplaySettings {
    /// Reads the settings of an `onnx` policy's card; any other policy's prompts are not
    /// the model's own text and cannot be replayed.
    pub fn from_card(card: &PolicyCard) -> Result<ReplaySettings, String> {
        if card.backend != "onnx" {
            return Err(format!(
                "recorded by the `{}` policy ({}): only the onnx policy's steps can be trained on",
                card.name, card.backend
            ));
        }
        let s = &card.settings;
        let grounding = match s.get("grounding").and_then(|v| v.as_str()) {
            Some("marks") | None => Grounding::Marks,
            Some("coordinates") => Grounding::Coordinates,
            Some(other) => return Err(format!("the policy card's grounding {other:?} is unknown")),
        };
        let constraint = match s.get("constrained") {
            None | Some(serde_json::Value::Null) => None,
            Some(v) => match v.as_str() {
                Some("action") => Some(Constraint::Action),
                Some("reasoned") => Some(Constraint::Reasoned),
                _ => return Err(format!("the policy card's constrained {v} is unknown")),
            },
        };
        let vision = s.get("vision").and_then(|v| v.as_bool()).unwrap_or(true);
        // Absent on the cards of policies with every action (and on older cards).
        let actions = match s.get("actions") {
            None => ActionSet::all(),
            Some(v) => serde_json::from_value(v.clone())
                .map_err(|e| format!("the policy card's actions {v}: {e}"))?,
        };
        Ok(ReplaySettings {
            grounding,
            constraint,
            vision,
            actions,
        })
    }

    /// What actions addressed: the grid only for a vision model that was asked for it.
    fn effective_grounding(&self) -> Grounding {
        crate::onnx::prompt::effective_grounding(self.grounding, self.vision)
    }
}

/// One step ready for the trainer: decoder inputs, then what was sampled.
pub struct StepInputs {
    /// Input embeddings, positions, prompt length, the grammar's allowed tokens.
    pub inputs: TeacherInputs,
    /// The sampled token ids, as stored.
    pub response: Vec<u32>,
    /// Their log-probabilities under the policy that sampled them.
    pub behaviour: Vec<f32>,
}

/// One step as shown to the policy, for a trainer outside surfgym ([`Replayer::shown`]).
pub struct Shown {
    /// The prompt text as recorded (the model's chat template applied), one
    /// [`Shown::placeholder`] where each image goes.
    pub prompt: String,
    /// The text marking an image's place in `prompt`.
    pub placeholder: String,
    /// The images in prompt order, as the policy was shown them (marks drawn).
    pub images: Vec<DynamicImage>,
    /// The prompt's token ids as the policy fed them (images expanded to their tokens).
    pub prompt_ids: Vec<u32>,
    /// The sampled token ids, as stored.
    pub response: Vec<u32>,
    /// Their log-probabilities under the policy that sampled them (under the grammar's
    /// mask when it decoded constrained).
    pub behaviour: Vec<f32>,
    /// When it decoded constrained: the same tokens' log-probabilities under the
    /// replaying model's full distribution, no mask. A trainer that scores without the
    /// mask starts its update from these (its ratios start at 1, not below).
    pub unmasked: Option<Vec<f32>>,
}

struct Parts {
    settings: ReplaySettings,
    text: String,
    images: Vec<DynamicImage>,
    response: Vec<u32>,
    behaviour: Vec<f32>,
}

/// Step `index` of `ep` with its policy's card, or the error saying which is missing.
pub(super) fn step_and_card(
    ep: &TraceEpisode,
    index: usize,
) -> Result<(&super::TraceStep, &PolicyCard), TraceError> {
    let fail = failing(ep, index);
    let step = ep
        .steps
        .get(index)
        .ok_or_else(|| fail("no such step".into()))?;
    let card = ep
        .policy
        .as_ref()
        .ok_or_else(|| fail("the episode does not record its policy".into()))?;
    Ok((step, card))
}

pub(super) fn failing(ep: &TraceEpisode, index: usize) -> impl Fn(String) -> TraceError {
    let episode = ep.id;
    move |message| TraceError::Step {
        episode,
        step: i32::try_from(index).unwrap_or(i32::MAX),
        message,
    }
}

/// Screenshots kept decoded (a prompt with several images shows earlier ones again).
const CACHED_IMAGES: usize = 16;

/// Rebuilds recorded steps' inputs with the frozen parts of a model (its token
/// embeddings and vision encoder, in ONNX Runtime).
pub struct Replayer {
    model: Model,
    screens: Screenshots,
}

impl Replayer {
    /// A replayer over `model`, reading screenshots from `blobs`.
    pub fn new(model: Model, blobs: Blobs) -> Replayer {
        Replayer {
            model,
            screens: Screenshots::new(blobs),
        }
    }

    /// The model.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The model back, for a later replay (the screenshots read are let go).
    pub fn into_model(self) -> Model {
        self.model
    }

    /// Step `index` of `ep` as its policy saw it, followed by what it sampled.
    pub async fn step(
        &mut self,
        ep: &TraceEpisode,
        index: usize,
    ) -> Result<StepInputs, TraceError> {
        let shown = self.parts(ep, index).await?;
        let fail = failing(ep, index);
        let mut prompt = inference::expand_images(&shown.text, &shown.images, self.model.config())
            .map_err(|e| fail(e.to_string()))?;
        if let Some(constraint) = shown.settings.constraint {
            let step = &ep.steps[index];
            let obs = Observation {
                url: step.url.clone(),
                title: step.title.clone(),
                elements: step.elements.clone(),
                tabs: step.tabs.clone(),
                ..Default::default()
            };
            prompt.grammar = Some(
                ActionGrammar::for_observation(
                    &obs,
                    shown.settings.effective_grounding(),
                    constraint,
                    shown.settings.actions,
                )
                .map_err(|e| fail(e.to_string()))?,
            );
        }
        let inputs = self
            .model
            .teacher_inputs(&prompt, &shown.response)
            .map_err(|e| fail(e.to_string()))?;
        Ok(StepInputs {
            inputs,
            response: shown.response,
            behaviour: shown.behaviour,
        })
    }

    /// Step `index` of `ep` as a trainer outside surfgym needs it: the prompt text, the
    /// images as the policy was shown them, and the exact token ids of both sides (the
    /// prompt's as the policy tokenised it, images expanded; the response's as stored).
    pub async fn shown(&mut self, ep: &TraceEpisode, index: usize) -> Result<Shown, TraceError> {
        let parts = self.parts(ep, index).await?;
        let fail = failing(ep, index);
        let prompt = inference::expand_images(&parts.text, &parts.images, self.model.config())
            .map_err(|e| fail(e.to_string()))?;
        let prompt_ids = self
            .model
            .encode(&prompt.text)
            .map_err(|e| fail(e.to_string()))?;
        // `prompt` has no grammar: scoring it is scoring the full distribution.
        let unmasked = match parts.settings.constraint {
            Some(_) => Some(
                self.model
                    .score(&prompt, &parts.response)
                    .map_err(|e| fail(e.to_string()))?,
            ),
            None => None,
        };
        Ok(Shown {
            prompt: parts.text,
            placeholder: self.model.config().layout.placeholder().to_string(),
            images: parts.images,
            prompt_ids,
            response: parts.response,
            behaviour: parts.behaviour,
            unmasked,
        })
    }

    /// What [`Replayer::step`] and [`Replayer::shown`] share: the recorded prompt, its
    /// screenshots as shown, the stored tokens.
    async fn parts(&mut self, ep: &TraceEpisode, index: usize) -> Result<Parts, TraceError> {
        let fail = failing(ep, index);
        let (step, card) = step_and_card(ep, index)?;
        let settings = ReplaySettings::from_card(card).map_err(&fail)?;
        let text = step
            .prompt
            .as_deref()
            .ok_or_else(|| fail("no prompt recorded".into()))?;
        let (response, behaviour) = step
            .tokens()
            .ok_or_else(|| fail("no sampled token ids with log-probabilities recorded".into()))?;
        let images = if self.model.has_vision() && settings.vision {
            let placeholder = self.model.config().layout.placeholder();
            let shown = text.matches(placeholder).count();
            if shown > index + 1 {
                return Err(fail(format!(
                    "the prompt shows {shown} screenshots but the episode has only {} steps so far",
                    index + 1
                )));
            }
            let mut images = Vec::with_capacity(shown);
            for j in index + 1 - shown..=index {
                images.push(
                    self.screens
                        .shown(ep, j, settings.effective_grounding())
                        .await
                        .map_err(&fail)?,
                );
            }
            images
        } else {
            Vec::new()
        };
        Ok(Parts {
            settings,
            text: text.to_string(),
            images,
            response,
            behaviour: behaviour.to_vec(),
        })
    }
}

/// Recorded screenshots as a policy was shown them, decoded once (a prompt with several
/// images shows earlier ones again).
pub struct Screenshots {
    blobs: Blobs,
    cache: HashMap<String, Arc<DynamicImage>>,
}

impl Screenshots {
    /// Screenshots read from `blobs`.
    pub fn new(blobs: Blobs) -> Screenshots {
        Screenshots {
            blobs,
            cache: HashMap::new(),
        }
    }

    /// Step `j`'s screenshot as the policy was shown it: marks drawn over it in marks
    /// mode, exactly as the policy drew them (the pool's own overlay is off in campaigns).
    pub async fn shown(
        &mut self,
        ep: &TraceEpisode,
        j: usize,
        grounding: Grounding,
    ) -> Result<DynamicImage, String> {
        let step = ep.steps.get(j).ok_or_else(|| format!("no step {j}"))?;
        let hash = step
            .screenshot
            .as_deref()
            .ok_or_else(|| format!("step {j} recorded no screenshot"))?;
        let plain = match self.cache.get(hash) {
            Some(img) => img.clone(),
            None => {
                let bytes = self
                    .blobs
                    .get(hash, step.screenshot_file.as_deref())
                    .await?;
                let img = Arc::new(
                    image::load_from_memory(&bytes)
                        .map_err(|e| format!("screenshot {hash}: {e}"))?,
                );
                if self.cache.len() >= CACHED_IMAGES {
                    self.cache.clear();
                }
                self.cache.insert(hash.to_string(), img.clone());
                img
            }
        };
        Ok(match grounding {
            Grounding::Marks => {
                let mut rgb = plain.to_rgb8();
                browser_pool::marks::draw(&mut rgb, &step.elements, screenshot_scale(ep));
                DynamicImage::ImageRgb8(rgb)
            }
            Grounding::Coordinates => (*plain).clone(),
        })
    }
}

/// Image pixels per CSS pixel of the episode's screenshots (what element boxes are
/// multiplied by to be drawn), as the pool computed it.
fn screenshot_scale(ep: &TraceEpisode) -> f64 {
    ep.screen
        .map_or(1.0, |s| s.device_scale * s.screenshot_scale)
}
