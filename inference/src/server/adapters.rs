//! Models loaded into a running server under new names, the way vLLM loads LoRA adapters
//! at run time (`POST /v1/load_lora_adapter` with `lora_name` and `lora_path`, `POST
//! /v1/unload_lora_adapter`): a training run's external trainer publishes each update as
//! a model directory, loads it under a name of its own, and the run's HTTP policy asks for
//! that name from its next episode on. Requests name their model; the base model answers
//! every name that is not loaded (as it always has), a loaded name is answered by its own
//! model with its own batching queue.
//!
//! Off unless the server was given a load root: the routes would otherwise let any client
//! make the server read any directory. A path is taken only if it resolves (links
//! followed) inside the root, and at most [`MAX_LOADED`] models are loaded at once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use super::queue::GenerationQueue;
use super::{PolicyServer, bad};
use crate::Model;

/// Loads a model directory (ONNX Runtime's library, device and threads as the base's).
pub type ModelLoader = Arc<dyn Fn(&Path) -> Result<Model, String> + Send + Sync>;

/// Most models loaded beside the base at once.
pub const MAX_LOADED: usize = 16;

/// Where models may be loaded from, and how.
pub(super) struct Loading {
    /// Canonical.
    pub(super) root: PathBuf,
    pub(super) load: ModelLoader,
}

/// A model loaded under a name.
#[derive(Clone)]
pub(super) struct Loaded {
    pub(super) queue: GenerationQueue,
    pub(super) dir: PathBuf,
}

/// The loaded models by name.
pub(super) type Registry = Arc<Mutex<BTreeMap<String, Loaded>>>;

#[derive(Deserialize)]
pub(super) struct LoadRequest {
    lora_name: Option<String>,
    lora_path: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct UnloadRequest {
    lora_name: Option<String>,
}

fn not_found(message: String) -> Response {
    let body = json!({"error": {"message": message, "type": "not_found_error"}});
    (StatusCode::NOT_FOUND, Json(body)).into_response()
}

fn off() -> Response {
    not_found("runtime loading is off: start `surfgym serve-policy` with --load-root DIR".into())
}

/// Why `name` may not be a loaded model's name (printable, no spaces, not too long, not
/// the base's), if it may not.
fn name_problem(name: &str, server: &PolicyServer) -> Option<String> {
    if name.is_empty() || name.len() > 128 {
        return Some("must be 1 to 128 characters".into());
    }
    if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some("must not contain spaces or control characters".into());
    }
    (name == server.name).then(|| format!("{name:?} is the base model's name"))
}

/// `POST /v1/load_lora_adapter`.
pub(super) async fn load(
    State(server): State<PolicyServer>,
    body: Result<Json<LoadRequest>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let Some(loading) = server.loading.clone() else {
        return off();
    };
    let Json(req) = match body {
        Ok(b) => b,
        Err(e) => return bad("", e.body_text()),
    };
    let name = req.lora_name.unwrap_or_default();
    if let Some(why) = name_problem(&name, &server) {
        return bad("lora_name", why);
    }
    let Some(path) = req.lora_path.filter(|p| !p.is_empty()) else {
        return bad("lora_path", "must name the model directory to load");
    };
    let dir = match std::fs::canonicalize(&path) {
        Ok(d) if d.is_dir() => d,
        Ok(_) => return bad("lora_path", format!("{path}: not a directory")),
        Err(e) => return bad("lora_path", format!("{path}: {e}")),
    };
    if !dir.starts_with(&loading.root) {
        return bad(
            "lora_path",
            format!(
                "{path}: outside the load root {} (--load-root)",
                loading.root.display()
            ),
        );
    }
    {
        let loaded = lock(&server.loaded);
        if loaded.contains_key(&name) {
            return bad(
                "lora_name",
                format!("{name:?} is already loaded (unload it first, or load under a new name)"),
            );
        }
        if loaded.len() >= MAX_LOADED {
            return bad(
                "lora_name",
                format!("{MAX_LOADED} models are loaded already: unload one first"),
            );
        }
    }
    let (load, d) = (loading.load.clone(), dir.clone());
    let model = match tokio::task::spawn_blocking(move || load(&d)).await {
        Ok(Ok(m)) => m,
        Ok(Err(e)) => return bad("lora_path", format!("{path}: cannot be loaded: {e}")),
        Err(e) => return super::server_error(format!("loading thread failed: {e}")),
    };
    if model.has_vision() != server.vision {
        return bad(
            "lora_path",
            format!(
                "{path}: {} images, the base model {}",
                if model.has_vision() {
                    "reads"
                } else {
                    "does not read"
                },
                if server.vision { "does" } else { "does not" }
            ),
        );
    }
    let queue = match GenerationQueue::start(Arc::new(Mutex::new(model)), server.batching) {
        Ok(q) => q,
        Err(e) => return super::server_error(format!("starting its queue: {e}")),
    };
    let mut loaded = lock(&server.loaded);
    // Checked again: another request may have loaded the name meanwhile.
    if loaded.contains_key(&name) || loaded.len() >= MAX_LOADED {
        return bad(
            "lora_name",
            format!("{name:?} was loaded by another request meanwhile"),
        );
    }
    tracing::info!(name = %name, dir = %dir.display(), "loaded a model under a new name");
    loaded.insert(
        name.clone(),
        Loaded {
            queue,
            dir: dir.clone(),
        },
    );
    Json(json!({"status": "loaded", "lora_name": name, "lora_path": dir})).into_response()
}

/// `POST /v1/unload_lora_adapter`.
pub(super) async fn unload(
    State(server): State<PolicyServer>,
    body: Result<Json<UnloadRequest>, axum::extract::rejection::JsonRejection>,
) -> Response {
    if server.loading.is_none() {
        return off();
    }
    let Json(req) = match body {
        Ok(b) => b,
        Err(e) => return bad("", e.body_text()),
    };
    let name = req.lora_name.unwrap_or_default();
    // Requests already queued on it finish: they hold the queue.
    match lock(&server.loaded).remove(&name) {
        Some(_) => Json(json!({"status": "unloaded", "lora_name": name})).into_response(),
        None => not_found(format!("no model is loaded under {name:?}")),
    }
}

pub(super) fn lock(r: &Registry) -> std::sync::MutexGuard<'_, BTreeMap<String, Loaded>> {
    r.lock().unwrap_or_else(|p| p.into_inner())
}
