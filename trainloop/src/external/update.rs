//! One external update, start to end: the training set written, the command run, its
//! output checked and published. Every attempt starts in fresh directories, so output an
//! interrupted attempt left behind is never taken.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use inference::Device;
use inference::Model;
use policy::traces::{Blobs, Replayer, Screenshots, TraceEpisode};
use store::Store;
use uuid::Uuid;

use super::accept::{self, SERVED_MODEL, WEIGHTS};
use super::{Dirs, ExternalError, ExternalTrainer, Returns, command, dataset};
use crate::config::RunConfig;
use crate::served::{self, Served};

/// The training set's description, for the command.
pub const MANIFEST: &str = "manifest.json";
/// The parent's weights keyed by ONNX initializer name, in the training set's directory.
pub const BASE_WEIGHTS: &str = "base_weights.safetensors";
/// `manifest.json`'s format tag.
pub const FORMAT: &str = "surfgym-training-set/1";

/// What one external update needs.
pub struct Job<'a> {
    /// The store (screenshots).
    pub store: &'a Store,
    /// The trainer's settings.
    pub trainer: &'a ExternalTrainer,
    /// The run.
    pub run: Uuid,
    /// The iteration.
    pub iteration: u32,
    /// The objective the selection followed, for the command.
    pub objective: training::Objective,
    /// The episodes the selection read.
    pub episodes: &'a [TraceEpisode],
    /// `(episode, step)` of each selectable step.
    pub at: &'a [(usize, usize)],
    /// The selection: index into `at`, advantage (or weight).
    pub kept: &'a [(usize, f32)],
    /// The version the update starts from.
    pub parent: &'a Path,
    /// Where the new version is published.
    pub out: &'a Path,
    /// This update's working directory (training set, output, logs).
    pub work: &'a Path,
    /// ONNX Runtime (the replay's frozen parts).
    pub dylib: &'a Path,
    /// The lineage's record so far (run, campaigns, selection); the external run's own is
    /// added under `external`.
    pub lineage: serde_json::Value,
    /// Set for a run whose policy is served over HTTP: its steps are read as requested,
    /// not replayed, and the command returns a served name.
    pub served: Option<ServedJob<'a>>,
}

/// What an update of a served policy needs.
pub struct ServedJob<'a> {
    /// The run's config (how its policy asks the server).
    pub cfg: &'a RunConfig,
    /// The server.
    pub served: &'a Served,
    /// The names the run's versions used so far (a new version needs a new one).
    pub used: Vec<String>,
}

/// What an external update produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// No selected step could be replayed: nothing to train on, the version stays.
    Nothing,
    /// A version published at the job's `out`.
    Version {
        /// Samples handed over.
        samples: usize,
        /// What the iteration's report records.
        report: serde_json::Value,
    },
    /// A served model (or adapter) name.
    ServedModel {
        /// The name.
        name: String,
        /// Samples handed over.
        samples: usize,
        /// What the iteration's report records.
        report: serde_json::Value,
    },
}

/// Runs one external update (see the module documentation). `skipped` gains the steps
/// that could not be replayed.
pub async fn update(
    job: Job<'_>,
    skipped: &mut BTreeMap<String, usize>,
) -> Result<Outcome, ExternalError> {
    let dirs = Dirs {
        input: job.work.join("input"),
        base: job.parent.to_path_buf(),
        output: job.work.join("output"),
    };
    if job.work.exists() {
        std::fs::remove_dir_all(job.work).map_err(|e| ExternalError::io(job.work, e))?;
    }
    for d in [&dirs.input, &dirs.output] {
        std::fs::create_dir_all(d).map_err(|e| ExternalError::io(d, e))?;
    }
    let mut steps = match &job.served {
        Some(_) => dataset::Steps::Requested(Screenshots::new(Blobs::Store(job.store.clone()))),
        None => {
            let model = Model::load(job.parent, job.dylib, Device::Cpu, 2).map_err(|e| {
                ExternalError::Dataset(format!("loading {}: {e}", job.parent.display()))
            })?;
            dataset::Steps::Replayed(Box::new(Replayer::new(
                model,
                Blobs::Store(job.store.clone()),
            )))
        }
    };
    let records = dataset::records(
        &mut steps,
        &dirs.input,
        job.episodes,
        job.at,
        job.kept,
        skipped,
    )
    .await?;
    drop(steps);
    if records.is_empty() {
        return Ok(Outcome::Nothing);
    }
    let files = dataset::write(&dirs.input, job.trainer.format, &records)?;

    // An ONNX parent's weights: what the command starts from, and what its tensors are
    // checked against and laid over. A served parent's are in its server.
    let base_weights = dirs.input.join(BASE_WEIGHTS);
    let decoder = match &job.served {
        Some(_) => None,
        None => Some(
            blocking({
                let (parent, base_weights) = (job.parent.to_path_buf(), base_weights.clone());
                move || {
                    let d = accept::parent_decoder(&parent)?;
                    let tensors: std::collections::HashMap<String, candle_core::Tensor> = d
                        .params()
                        .iter()
                        .map(|(k, v)| (k.clone(), v.as_tensor().clone()))
                        .collect();
                    candle_core::safetensors::save(&tensors, &base_weights).map_err(|e| {
                        ExternalError::Dataset(format!("{}: {e}", base_weights.display()))
                    })?;
                    Ok(d)
                }
            })
            .await?,
        ),
    };
    let parent_name = match &job.served {
        Some(_) => Some(served::name_of(job.parent).map_err(ExternalError::Dataset)?),
        None => None,
    };
    let returns = match job.trainer.returns {
        Returns::Safetensors => "safetensors",
        Returns::ServedModel => "served_model",
    };
    let mut manifest = serde_json::json!({
        "format": FORMAT, "run": job.run, "iteration": job.iteration,
        "objective": job.objective, "samples": records.len(), "files": files,
        "images": dataset::IMAGES, "base_model": job.parent, "base_weights": BASE_WEIGHTS,
        "returns": returns, "output": dirs.output,
    });
    let mut env: Vec<(String, String)> = [
        ("SURFGYM_RUN", job.run.to_string()),
        ("SURFGYM_ITERATION", job.iteration.to_string()),
        ("SURFGYM_OBJECTIVE", job.objective.to_string()),
        ("SURFGYM_SAMPLES", records.len().to_string()),
        ("SURFGYM_RETURNS", returns.to_string()),
    ]
    .map(|(k, v)| (k.to_string(), v))
    .into();
    match (&job.served, &parent_name) {
        (Some(s), Some(name)) => {
            // No local weights; the prompt ids are the server's to make.
            manifest["base_weights"] = serde_json::Value::Null;
            manifest["served"] = serde_json::json!({
                "base_url": s.served.base_url, "model": name, "prompt_ids": false,
            });
            env.push(("SURFGYM_SERVED_URL".into(), s.served.base_url.clone()));
            env.push(("SURFGYM_SERVED_MODEL".into(), name.clone()));
        }
        _ => env.push((
            "SURFGYM_BASE_WEIGHTS".into(),
            base_weights.display().to_string(),
        )),
    }
    write_json(&dirs.input.join(MANIFEST), &manifest)?;
    let ran = command::run(job.trainer, &dirs, &env, job.work).await;
    // The copy of the weights is only the command's starting point.
    let _ = std::fs::remove_file(&base_weights);
    let ran = ran?;
    let report = serde_json::json!({
        "command": job.trainer.command, "format": job.trainer.format, "returns": returns,
        "samples": records.len(), "seconds": ran.seconds, "training_set": dirs.input,
        "stdout": ran.stdout, "stderr": ran.stderr,
        "trainer_report": accept::report(&dirs.output)?,
    });
    let mut lineage = job.lineage;
    lineage["external"] = report.clone();
    lineage["samples"] = records.len().into();
    match (job.trainer.returns, decoder, job.served) {
        (Returns::Safetensors, Some(decoder), None) => {
            let (file, parent, out) = (
                dirs.output.join(WEIGHTS),
                job.parent.to_path_buf(),
                job.out.to_path_buf(),
            );
            blocking(move || {
                let weights = accept::read_weights(&file, &decoder)?;
                accept::publish(&parent, &out, decoder, &weights, lineage)
            })
            .await?;
            Ok(Outcome::Version {
                samples: records.len(),
                report,
            })
        }
        (Returns::ServedModel, None, Some(s)) => {
            let file = dirs.output.join(SERVED_MODEL);
            let name = accept::served_model(&file)?;
            let fail = |why: String| ExternalError::Output {
                path: file.display().to_string(),
                why,
            };
            if s.used.contains(&name) {
                return Err(fail(format!(
                    "{name:?} names an earlier version of this run: each update must be served under a new name (episodes record only the name they asked for)"
                )));
            }
            match s.served.lists(s.cfg, &name).await {
                Ok(true) => {}
                Ok(false) => {
                    return Err(fail(format!(
                        "the server at {} does not list {name:?}: the trainer must load it there before it returns (e.g. POST /v1/load_lora_adapter)",
                        s.served.base_url
                    )));
                }
                Err(e) => {
                    return Err(fail(format!(
                        "cannot ask the server whether it serves {name:?}: {e}"
                    )));
                }
            }
            lineage["served_model"] = name.clone().into();
            lineage["parent"] = parent_name.unwrap_or_default().into();
            served::publish(job.out, &name, &lineage).map_err(|e| ExternalError::io(job.out, e))?;
            Ok(Outcome::ServedModel {
                name,
                samples: records.len(),
                report,
            })
        }
        (returns, ..) => Err(ExternalError::Dataset(format!(
            "trainer.returns {returns:?} does not fit this run's policy (served runs take served_model, ONNX runs safetensors)"
        ))),
    }
}

fn write_json(path: &Path, value: &serde_json::Value) -> Result<(), ExternalError> {
    let text = serde_json::to_string_pretty(value).expect("a JSON value serialises");
    std::fs::write(path, text).map_err(|e| ExternalError::io(path, e))
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ExternalError> + Send + 'static,
) -> Result<T, ExternalError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ExternalError::Dataset(format!("worker thread: {e}")))?
}

/// Where a run keeps iteration `idx`'s external update.
pub fn work_dir(run_dir: &Path, idx: u32) -> PathBuf {
    run_dir.join("external").join(format!("i{idx}"))
}
