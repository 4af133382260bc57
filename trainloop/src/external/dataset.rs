//! The iteration's training set as files an external trainer reads: TRL's conversational
//! JSON Lines (`train.jsonl`), verl's Parquet (`train.parquet`, [`super::parquet`]), and
//! the images the policy was shown (`images/`, PNG, referenced by relative path).
//!
//! The samples are the selected steps replayed exactly as the policy had them
//! ([`policy::traces::Replayer::shown`]): the prompt as recorded (the model's chat
//! template already applied), the prompt's token ids as the policy fed them, the stored
//! response ids and their recorded log-probabilities, nothing re-rendered or re-tokenised.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use policy::traces::{Replayer, Screenshots, TraceEpisode};
use serde::Serialize;

use super::{ExternalError, Format};

/// The JSON Lines file.
pub const JSONL: &str = "train.jsonl";
/// The Parquet file.
pub const PARQUET: &str = "train.parquet";
/// The images' directory.
pub const IMAGES: &str = "images";

/// One selected step as the external trainer gets it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Record {
    /// The episode.
    pub episode: String,
    /// The step's index in it.
    pub step: usize,
    /// The task.
    pub task: String,
    /// The task's website.
    pub site: String,
    /// GRPO's group: the task instance (campaign/task/seed) whose samples it compares.
    pub group: String,
    /// The prompt as the policy was given it, chat template applied, one placeholder per
    /// image.
    pub prompt: String,
    /// What marks an image's place in `prompt`.
    pub placeholder: String,
    /// The response text.
    pub completion: String,
    /// The prompt's token ids (images expanded).
    pub prompt_ids: Vec<u32>,
    /// The response's token ids, as sampled.
    pub completion_ids: Vec<u32>,
    /// Their log-probabilities under the policy that sampled them: under the action
    /// grammar's mask when `masked`.
    pub old_logprobs: Vec<f32>,
    /// Whether the policy decoded under the action grammar, so that `old_logprobs` are of
    /// the masked, renormalised distribution.
    pub masked: bool,
    /// When `masked`: the same tokens under the iteration's parent version with no mask,
    /// what a trainer that scores without the mask computes at the start of its update
    /// (empty otherwise).
    pub old_logprobs_unmasked: Vec<f32>,
    /// The selection's weight: GRPO's advantage, or behaviour cloning's weight.
    pub advantage: f32,
    /// The episode's reward.
    pub reward: f64,
    /// The images, relative to the training set's directory.
    pub images: Vec<String>,
}

/// How the selected steps are read.
pub enum Steps {
    /// Replayed through the model's frozen parts exactly as the ONNX policy had them
    /// ([`policy::traces::Replayer::shown`]).
    Replayed(Box<Replayer>),
    /// Read as a served policy's requests carried them ([`policy::traces::requested`]):
    /// the prompt is the user message's text after one placeholder per image, with no
    /// prompt ids (the server tokenised it with its own template); the completion's ids
    /// and log-probabilities are there when the server reported them.
    Requested(Screenshots),
}

/// One step as read, before its images are saved.
struct Read {
    prompt: String,
    placeholder: String,
    images: Vec<image::DynamicImage>,
    prompt_ids: Vec<u32>,
    completion: String,
    completion_ids: Vec<u32>,
    logprobs: Vec<f32>,
    unmasked: Option<Vec<f32>>,
}

impl Steps {
    async fn read(
        &mut self,
        ep: &TraceEpisode,
        s: usize,
    ) -> Result<Read, policy::traces::TraceError> {
        match self {
            Steps::Replayed(replayer) => {
                let shown = replayer.shown(ep, s).await?;
                let completion = match &ep.steps[s].raw_output {
                    Some(text) => text.clone(),
                    None => shown
                        .response
                        .iter()
                        .map(|&t| replayer.model().token_text(t))
                        .collect(),
                };
                Ok(Read {
                    prompt: shown.prompt,
                    placeholder: shown.placeholder,
                    images: shown.images,
                    prompt_ids: shown.prompt_ids,
                    completion,
                    completion_ids: shown.response,
                    logprobs: shown.behaviour,
                    unmasked: shown.unmasked,
                })
            }
            Steps::Requested(screens) => {
                let step = policy::traces::requested(screens, ep, s).await?;
                Ok(Read {
                    prompt: SERVED_PLACEHOLDER.repeat(step.images.len()) + &step.text,
                    placeholder: SERVED_PLACEHOLDER.to_string(),
                    images: step.images,
                    prompt_ids: Vec::new(),
                    completion: step.completion,
                    completion_ids: step.token_ids,
                    logprobs: step.logprobs,
                    // A server's guided decoding is its own: surfgym cannot tell.
                    unmasked: None,
                })
            }
        }
    }
}

/// Reads the selected steps (`kept`: index into `at`, advantage) and writes their images
/// under `dir/images`. A step that cannot be read is counted in `skipped` with its reason
/// and left out, as the built-in update does.
pub async fn records(
    steps: &mut Steps,
    dir: &Path,
    episodes: &[TraceEpisode],
    at: &[(usize, usize)],
    kept: &[(usize, f32)],
    skipped: &mut BTreeMap<String, usize>,
) -> Result<Vec<Record>, ExternalError> {
    let images = dir.join(IMAGES);
    std::fs::create_dir_all(&images).map_err(|e| ExternalError::io(&images, e))?;
    let mut out = Vec::with_capacity(kept.len());
    let groups = crate::data::groups_of(episodes);
    for &(i, advantage) in kept {
        let (e, s) = at[i];
        let ep = &episodes[e];
        let read = match steps.read(ep, s).await {
            Ok(x) => x,
            Err(err) => {
                tracing::warn!(error = %err, "step left out of the training set");
                *skipped
                    .entry(format!("cannot be replayed: {err}"))
                    .or_default() += 1;
                continue;
            }
        };
        let files = save_images(dir, ep, s, &read.images)?;
        out.push(Record {
            episode: ep.id.to_string(),
            step: s,
            task: ep.task_id.clone(),
            site: ep.site.clone(),
            group: groups[e].clone(),
            prompt: read.prompt,
            placeholder: read.placeholder,
            completion: read.completion,
            prompt_ids: read.prompt_ids,
            completion_ids: read.completion_ids,
            old_logprobs: read.logprobs,
            masked: read.unmasked.is_some(),
            old_logprobs_unmasked: read.unmasked.unwrap_or_default(),
            advantage,
            reward: ep.reward(false),
            images: files,
        });
    }
    Ok(out)
}

/// What marks an image's place in a served policy's prompt (its request sent the images
/// before the text).
pub const SERVED_PLACEHOLDER: &str = "<image>";

/// Saves step `s`'s images under `dir/images`; returns their relative names.
fn save_images(
    dir: &Path,
    ep: &TraceEpisode,
    s: usize,
    images: &[image::DynamicImage],
) -> Result<Vec<String>, ExternalError> {
    let mut files = Vec::with_capacity(images.len());
    for (k, img) in images.iter().enumerate() {
        let name = format!("{IMAGES}/{}-{s}-{k}.png", ep.id);
        let path = dir.join(&name);
        img.save_with_format(&path, image::ImageFormat::Png)
            .map_err(|err| ExternalError::Dataset(format!("{}: {err}", path.display())))?;
        files.push(name);
    }
    Ok(files)
}

/// Writes `records` in `format` into `dir`; returns the files written (relative names).
pub fn write(dir: &Path, format: Format, records: &[Record]) -> Result<Vec<String>, ExternalError> {
    let mut files = Vec::new();
    if format.jsonl() {
        let path = dir.join(JSONL);
        let file = std::fs::File::create(&path).map_err(|e| ExternalError::io(&path, e))?;
        let mut w = std::io::BufWriter::new(file);
        for r in records {
            serde_json::to_writer(&mut w, &trl_line(r))
                .map_err(|e| ExternalError::Dataset(format!("{}: {e}", path.display())))?;
            w.write_all(b"\n")
                .map_err(|e| ExternalError::io(&path, e))?;
        }
        w.flush().map_err(|e| ExternalError::io(&path, e))?;
        files.push(JSONL.to_string());
    }
    if format.parquet() {
        let path = dir.join(PARQUET);
        super::parquet::write(&path, records)
            .map_err(|e| ExternalError::Dataset(format!("{}: {e}", path.display())))?;
        files.push(PARQUET.to_string());
    }
    Ok(files)
}

/// One line of TRL's conversational format: `messages` (the user turn's text and image
/// parts in prompt order, then the assistant's response) and `images`, plus the exact
/// tokens (`input_ids` and `completion_mask`, which TRL's SFT trainer takes as an
/// already tokenised dataset; `prompt_ids` / `completion_ids` apart) and what RL needs.
fn trl_line(r: &Record) -> serde_json::Value {
    let mut content = Vec::new();
    for (k, piece) in r.prompt.split(r.placeholder.as_str()).enumerate() {
        if k > 0 {
            content.push(serde_json::json!({"type": "image"}));
        }
        if !piece.is_empty() {
            content.push(serde_json::json!({"type": "text", "text": piece}));
        }
    }
    let input_ids: Vec<u32> = r
        .prompt_ids
        .iter()
        .chain(&r.completion_ids)
        .copied()
        .collect();
    let completion_mask: Vec<u8> = std::iter::repeat_n(0, r.prompt_ids.len())
        .chain(std::iter::repeat_n(1, r.completion_ids.len()))
        .collect();
    let mut line = serde_json::json!({
        "messages": [
            {"role": "user", "content": content},
            {"role": "assistant", "content": [{"type": "text", "text": r.completion}]},
        ],
        "images": r.images,
        "prompt_text": r.prompt,
        "completion_text": r.completion,
        "prompt_ids": r.prompt_ids,
        "completion_ids": r.completion_ids,
        "old_logprobs": r.old_logprobs,
        "masked": r.masked,
        "advantage": r.advantage,
        "reward": r.reward,
        "episode": r.episode,
        "step": r.step,
        "task": r.task,
        "site": r.site,
        "group": r.group,
    });
    // Whole-sequence ids only when surfgym knows the prompt's (a served policy's server
    // tokenised its prompt with a template surfgym never saw).
    if !r.prompt_ids.is_empty() {
        line["input_ids"] = input_ids.into();
        line["completion_mask"] = completion_mask.into();
    }
    if r.masked {
        line["old_logprobs_unmasked"] = r.old_logprobs_unmasked.clone().into();
    }
    line
}
