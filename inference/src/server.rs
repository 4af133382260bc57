//! `surfgym serve-policy`: the ONNX policy behind an OpenAI-compatible
//! `/v1/chat/completions` endpoint, so inference can run on a GPU machine and rollouts
//! elsewhere (any OpenAI-style client works; surfgym's HTTP policy is one). Concurrent
//! requests are generated together through the one batching queue ([`crate::batch`]).
//! The `cli` starts it; the flags and routes are its.

mod adapters;
mod queue;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::grammar::ActionGrammar;
use crate::{GenParams, Model};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Value, json};

pub use adapters::{MAX_LOADED, ModelLoader};
pub use queue::{BatchStats, Batching, Busy};

/// What the endpoint serves.
#[derive(Clone)]
pub struct PolicyServer {
    queue: queue::GenerationQueue,
    model: Arc<Mutex<Model>>,
    vision: bool,
    name: String,
    /// The model directory served now (a version link's target once it moved).
    serving: Arc<std::sync::RwLock<PathBuf>>,
    batching: Batching,
    /// Models loaded at run time under names of their own ([`adapters`]).
    loaded: adapters::Registry,
    loading: Option<Arc<adapters::Loading>>,
}

impl PolicyServer {
    /// Serves `model` under `name` (listed; it also answers any name not loaded at run
    /// time, see [`PolicyServer::with_loading`]), batching concurrent requests as `batching` says.
    pub fn start(
        model: Arc<Mutex<Model>>,
        name: impl Into<String>,
        batching: Batching,
    ) -> std::io::Result<PolicyServer> {
        let (vision, dir) = {
            let m = model.lock().unwrap_or_else(|p| p.into_inner());
            let onnx = &m.config().onnx_dir;
            let dir = onnx.parent().unwrap_or(onnx);
            // The directory itself, not the version link it was reached through.
            (
                m.has_vision(),
                std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()),
            )
        };
        Ok(PolicyServer {
            queue: queue::GenerationQueue::start(model.clone(), batching)?,
            model,
            vision,
            name: name.into(),
            serving: Arc::new(std::sync::RwLock::new(dir)),
            batching,
            loaded: Default::default(),
            loading: None,
        })
    }

    /// Lets clients load model directories inside `root` under names of their own
    /// (`POST /v1/load_lora_adapter`, vLLM's route) and unload them, each loaded by `load`.
    pub fn with_loading(mut self, root: &Path, load: ModelLoader) -> std::io::Result<Self> {
        let root = std::fs::canonicalize(root)?;
        self.loading = Some(Arc::new(adapters::Loading { root, load }));
        Ok(self)
    }

    /// The names loaded at run time: each one's directory and the requests it answered.
    pub fn loaded(&self) -> Vec<(String, PathBuf, u64)> {
        adapters::lock(&self.loaded)
            .iter()
            .map(|(n, l)| (n.clone(), l.dir.clone(), l.queue.stats().requests()))
            .collect()
    }

    /// Serves `model` (loaded from `dir`, e.g. a newly promoted policy version) from the
    /// next batch on; the batch running now finishes on the old one. A model that reads
    /// images cannot replace one that does not (or the reverse): clients were told which.
    pub fn replace_model(&self, model: Model, dir: PathBuf) -> Result<(), String> {
        if model.has_vision() != self.vision {
            return Err(format!(
                "{}: {} images, the model served now {}",
                dir.display(),
                if model.has_vision() {
                    "reads"
                } else {
                    "does not read"
                },
                if self.vision { "does" } else { "does not" }
            ));
        }
        *self.model.lock().unwrap_or_else(|p| p.into_inner()) = model;
        *self.serving.write().unwrap_or_else(|p| p.into_inner()) = dir;
        Ok(())
    }

    /// The model directory served now.
    pub fn serving(&self) -> PathBuf {
        self.serving
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// What the batching queue has done so far.
    pub fn stats(&self) -> &BatchStats {
        self.queue.stats()
    }
}

#[derive(Deserialize)]
struct ChatRequest {
    #[serde(default)]
    model: Option<String>,
    messages: Vec<ChatMessage>,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    temperature: Option<f32>,
    #[serde(default)]
    top_p: Option<f32>,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    stop: Option<Value>,
    #[serde(default)]
    logprobs: Option<bool>,
    /// vLLM's: each `logprobs.content[].token` as `token_id:<id>`.
    #[serde(default)]
    return_tokens_as_token_ids: Option<bool>,
    /// vLLM's guided decoding by a regular expression (the whole output must match).
    #[serde(default)]
    guided_regex: Option<String>,
    /// vLLM's newer spelling: `{"regex": "..."}`.
    #[serde(default)]
    structured_outputs: Option<Value>,
}

#[derive(Deserialize)]
struct ChatMessage {
    role: String,
    content: Value,
}

/// An OpenAI-style error: 400 with the parameter it is about.
fn bad(param: &str, message: impl Into<String>) -> Response {
    let body = json!({"error": {"message": message.into(), "type": "invalid_request_error", "param": param}});
    (StatusCode::BAD_REQUEST, Json(body)).into_response()
}

fn decode_image(url: &str) -> Result<image::DynamicImage, String> {
    let data = url
        .strip_prefix("data:")
        .ok_or("only data: URLs are accepted for images")?;
    let (_, b64) = data
        .split_once(";base64,")
        .ok_or("the image data URL must be base64")?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|e| format!("bad base64: {e}"))?;
    image::load_from_memory(&bytes).map_err(|e| format!("not an image: {e}"))
}

fn server_error(message: String) -> Response {
    let body = json!({"error": {"message": message, "type": "server_error"}});
    (StatusCode::INTERNAL_SERVER_ERROR, Json(body)).into_response()
}

async fn chat(
    State(server): State<PolicyServer>,
    body: Result<Json<ChatRequest>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let Json(req) = match body {
        Ok(b) => b,
        Err(e) => return bad("", e.body_text()),
    };
    if req.messages.is_empty() {
        return bad("messages", "at least one message is required");
    }
    let max_tokens = req.max_tokens.unwrap_or(128);
    if max_tokens == 0 || max_tokens > 4096 {
        return bad("max_tokens", "must be between 1 and 4096");
    }
    let temperature = req.temperature.unwrap_or(0.0);
    if !(0.0..=2.0).contains(&temperature) {
        return bad("temperature", "must be between 0 and 2");
    }
    let top_p = req.top_p.unwrap_or(1.0);
    if !(top_p > 0.0 && top_p <= 1.0) {
        return bad("top_p", "must be in (0, 1]");
    }
    let stop: Vec<String> = match &req.stop {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => a
            .iter()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect(),
        Some(_) => return bad("stop", "must be a string or a list of strings"),
    };
    let grammar = match (&req.guided_regex, &req.structured_outputs) {
        (Some(re), _) => Some(("guided_regex", re.as_str())),
        (None, Some(s)) => match s.get("regex").and_then(Value::as_str) {
            Some(re) => Some(("structured_outputs.regex", re)),
            None => {
                return bad(
                    "structured_outputs",
                    "only {\"regex\": \"...\"} is supported",
                );
            }
        },
        (None, None) => None,
    };
    let grammar = match grammar {
        None => None,
        Some((param, re)) => match ActionGrammar::new(&format!("^(?:{re})$")) {
            Ok(g) => Some(g),
            Err(e) => return bad(param, e.to_string()),
        },
    };
    let vision = server.vision;
    // Messages for the chat template (image parts become {"type": "image"}), and the images.
    let mut messages = Vec::new();
    let mut images = Vec::new();
    for (i, m) in req.messages.iter().enumerate() {
        if !matches!(m.role.as_str(), "system" | "user" | "assistant") {
            return bad(
                &format!("messages[{i}].role"),
                "must be system, user or assistant",
            );
        }
        let content = match &m.content {
            Value::String(s) if vision => json!([{"type": "text", "text": s}]),
            Value::String(s) => json!(s),
            Value::Array(parts) => {
                let mut out = Vec::new();
                let mut text = String::new();
                for (j, p) in parts.iter().enumerate() {
                    match p["type"].as_str() {
                        Some("text") => {
                            let t = p["text"].as_str().unwrap_or_default();
                            text.push_str(t);
                            out.push(json!({"type": "text", "text": t}));
                        }
                        Some("image_url") if vision => {
                            match decode_image(p["image_url"]["url"].as_str().unwrap_or_default()) {
                                Ok(img) => {
                                    images.push(img);
                                    out.push(json!({"type": "image"}));
                                }
                                Err(e) => {
                                    return bad(
                                        &format!("messages[{i}].content[{j}].image_url.url"),
                                        e,
                                    );
                                }
                            }
                        }
                        Some("image_url") => {
                            return bad(
                                &format!("messages[{i}].content[{j}]"),
                                "this model reads no images",
                            );
                        }
                        _ => {
                            return bad(
                                &format!("messages[{i}].content[{j}].type"),
                                "must be text or image_url",
                            );
                        }
                    }
                }
                if vision {
                    Value::Array(out)
                } else {
                    json!(text)
                }
            }
            _ => {
                return bad(
                    &format!("messages[{i}].content"),
                    "must be a string or a list of parts",
                );
            }
        };
        messages.push(json!({"role": m.role, "content": content}));
    }
    let seed = req.seed.unwrap_or(0);
    let params = GenParams {
        max_new_tokens: max_tokens as usize,
        temperature,
        top_p,
        stop,
    };
    let as_ids = req.return_tokens_as_token_ids.unwrap_or(false);
    let job = queue::Job {
        messages: Value::Array(messages),
        images,
        params,
        seed,
        grammar,
        pieces: req.logprobs.unwrap_or(false) && !as_ids,
    };
    // A loaded name has its own model; the base answers every other name.
    let queue = req
        .model
        .as_ref()
        .and_then(|m| {
            adapters::lock(&server.loaded)
                .get(m)
                .map(|l| l.queue.clone())
        })
        .unwrap_or_else(|| server.queue.clone());
    let waiting = match queue.submit(job) {
        Ok(rx) => rx,
        Err(busy) => {
            // 503 is what OpenAI-style clients (ours included) retry with backoff.
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                [(axum::http::header::RETRY_AFTER, "1")],
                Json(json!({"error": {"message": busy.to_string(), "type": "server_busy"}})),
            )
                .into_response();
        }
    };
    let queue::Done {
        generation,
        prompt_tokens,
        pieces,
    } = match waiting.await {
        Ok(Ok(done)) => done,
        Ok(Err(queue::JobError::Request(e))) => return bad("messages", e),
        Ok(Err(queue::JobError::Model(e))) => return server_error(e),
        Err(_) => return server_error("the generation thread stopped".into()),
    };
    let finish = match generation.finish {
        crate::Finish::Length => "length",
        _ => "stop",
    };
    let logprobs = req.logprobs.unwrap_or(false).then(|| {
        let content: Vec<Value> = generation
            .tokens
            .iter()
            .zip(&generation.logprobs)
            .enumerate()
            .map(|(i, (id, l))| {
                // vLLM's spelling of a token by id; its text otherwise, as OpenAI's.
                let token = if as_ids {
                    format!("token_id:{id}")
                } else {
                    pieces.get(i).cloned().unwrap_or_default()
                };
                json!({"token": token, "logprob": l})
            })
            .collect();
        json!({ "content": content })
    });
    let created = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Json(json!({
        "id": format!("chatcmpl-{}", uuid::Uuid::new_v4().simple()),
        "object": "chat.completion",
        "created": created,
        "model": req.model.unwrap_or_else(|| server.name.clone()),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": generation.text}, "finish_reason": finish, "logprobs": logprobs}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": generation.tokens.len(), "total_tokens": prompt_tokens + generation.tokens.len()}
    }))
    .into_response()
}

async fn models(State(server): State<PolicyServer>) -> Json<Value> {
    let mut data = vec![
        json!({"id": server.name, "object": "model", "owned_by": "surfgym",
        "root": server.serving().display().to_string()}),
    ];
    for (name, dir, _) in server.loaded() {
        data.push(json!({"id": name, "object": "model", "owned_by": "surfgym",
            "root": dir.display().to_string(), "parent": server.name}));
    }
    Json(json!({"object": "list", "data": data}))
}

async fn health(State(server): State<PolicyServer>) -> Json<Value> {
    let s = server.stats();
    // Requests per name loaded at run time (the base's are `requests`).
    let loaded: serde_json::Map<String, Value> = server
        .loaded()
        .into_iter()
        .map(|(name, _, n)| (name, n.into()))
        .collect();
    Json(
        json!({"status": "ok", "requests": s.requests(), "batches": s.batches(), "largest_batch": s.largest(),
            "loaded": loaded}),
    )
}

/// The OpenAI-compatible app.
pub fn router(server: PolicyServer) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/v1/models", get(models))
        .route("/v1/load_lora_adapter", post(adapters::load))
        .route("/v1/unload_lora_adapter", post(adapters::unload))
        .route("/health", get(health))
        // Screenshots travel in the body.
        .layer(DefaultBodyLimit::max(64 * 1024 * 1024))
        .with_state(server)
}
