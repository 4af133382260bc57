//! A policy served over HTTP by any OpenAI-compatible chat-completions server (vLLM,
//! SGLang, hosted APIs, or `surfgym serve-policy`): screenshots go as base64 JPEG data URLs;
//! requests have a timeout, are retried with backoff when the server is unreachable or
//! overloaded, and are limited in number; log-probabilities are kept when returned.
//!
//! Every episode sends its own request: a serving engine batches them continuously, so
//! nothing is gained by batching here.

use std::io::Cursor;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use super::onnx::grammar::{Constraint, output_regex};
use super::onnx::prompt::{self, PromptConfig};
use super::output::parse_output;
use super::{Decision, Policy, PolicyError, StepInput};

/// How to reach and use the server.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Base URL, e.g. `http://gpu-box:8000` (the path `/v1/chat/completions` is appended).
    pub base_url: String,
    /// The `model` field of requests.
    pub model: String,
    /// Bearer token, if the server wants one.
    pub api_key: Option<String>,
    /// Limit per request.
    pub timeout: Duration,
    /// Retries after the first try (connection errors, timeouts, 429 and 5xx).
    pub retries: u32,
    /// Requests in flight at most.
    pub concurrency: usize,
    /// `max_tokens`.
    pub max_tokens: u32,
    /// `temperature`.
    pub temperature: f32,
    /// `top_p`.
    pub top_p: f32,
    /// Prompting.
    pub prompt: PromptConfig,
    /// Viewport the coordinates grid maps to when an observation has no screenshot to
    /// tell its own (a campaign's screen can be any size).
    pub viewport: (u32, u32),
    /// Guided decoding: each request carries the output grammar for its observation as
    /// `guided_regex` (vLLM's parameter; `serve-policy` honours it too), so the model can
    /// only answer with one action (alone, or after its reasoning).
    pub constrained: Option<Constraint>,
}

impl HttpOptions {
    /// Defaults for a server: 60 s timeout, 3 retries, 16 in flight, greedy, 128 tokens.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> HttpOptions {
        HttpOptions {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            timeout: Duration::from_secs(60),
            retries: 3,
            concurrency: 16,
            max_tokens: 128,
            temperature: 0.0,
            top_p: 1.0,
            prompt: PromptConfig::default(),
            viewport: (1280, 720),
            constrained: None,
        }
    }
}

/// A client for one OpenAI-compatible chat-completions server: timeouts, retries with
/// backoff, a limit on requests in flight. Shared by the HTTP policy and the model judge.
pub struct ChatClient {
    client: reqwest::Client,
    opts: HttpOptions,
    slots: Arc<Semaphore>,
}

/// A JPEG as an image content part (a base64 data URL).
pub fn image_part(jpeg: &[u8]) -> Value {
    let url = format!(
        "data:image/jpeg;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(jpeg)
    );
    json!({"type": "image_url", "image_url": {"url": url}})
}

impl ChatClient {
    /// A client for the server in `opts`.
    pub fn new(opts: HttpOptions) -> Result<ChatClient, PolicyError> {
        let client = reqwest::Client::builder()
            .timeout(opts.timeout)
            .build()
            .map_err(|e| PolicyError::Failed(format!("HTTP client: {e}")))?;
        Ok(ChatClient {
            slots: Arc::new(Semaphore::new(opts.concurrency.max(1))),
            client,
            opts,
        })
    }

    /// The options it was made with.
    pub fn options(&self) -> &HttpOptions {
        &self.opts
    }

    /// One user turn (content parts) → the reply's text and per-token log-probabilities.
    pub async fn complete(
        &self,
        content: Vec<Value>,
        seed: u64,
    ) -> Result<(String, Vec<f32>), PolicyError> {
        self.complete_guided(content, seed, None).await
    }

    /// [`ChatClient::complete`], the output held to `regex` by the server when given.
    pub async fn complete_guided(
        &self,
        content: Vec<Value>,
        seed: u64,
        regex: Option<String>,
    ) -> Result<(String, Vec<f32>), PolicyError> {
        let mut body = json!({
            "model": self.opts.model,
            "messages": [{"role": "user", "content": content}],
            "max_tokens": self.opts.max_tokens,
            "temperature": self.opts.temperature,
            "top_p": self.opts.top_p,
            "seed": seed >> 11,
            "logprobs": true
        });
        if let Some(re) = regex {
            body["guided_regex"] = json!(re);
        }
        let _slot = self
            .slots
            .acquire()
            .await
            .map_err(|_| PolicyError::Unavailable("client closed".into()))?;
        let resp = self.call(&body).await?;
        let choice = &resp["choices"][0];
        let text = choice["message"]["content"]
            .as_str()
            .ok_or_else(|| {
                PolicyError::Failed("the response has no choices[0].message.content".into())
            })?
            .to_string();
        let logprobs = choice["logprobs"]["content"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| t["logprob"].as_f64())
                    .map(|l| l as f32)
                    .collect()
            })
            .unwrap_or_default();
        Ok((text, logprobs))
    }

    async fn call(&self, body: &Value) -> Result<Value, PolicyError> {
        let url = format!(
            "{}/v1/chat/completions",
            self.opts.base_url.trim_end_matches('/')
        );
        let mut last = String::new();
        for attempt in 0..=self.opts.retries {
            if attempt > 0 {
                // 0.5 s, 1 s, 2 s, ... capped at 8 s.
                tokio::time::sleep(Duration::from_millis(500) * 2u32.pow((attempt - 1).min(4)))
                    .await;
            }
            let mut req = self.client.post(&url).json(body);
            if let Some(key) = &self.opts.api_key {
                req = req.bearer_auth(key);
            }
            match req.send().await {
                Ok(resp) if resp.status().is_success() => {
                    return resp
                        .json()
                        .await
                        .map_err(|e| PolicyError::Failed(format!("unreadable response: {e}")));
                }
                Ok(resp) => {
                    let status = resp.status();
                    let text = resp.text().await.unwrap_or_default();
                    last = format!("{status}: {}", text.chars().take(300).collect::<String>());
                    if !(status.is_server_error() || status.as_u16() == 429) {
                        return Err(PolicyError::Failed(format!(
                            "the server refused the request: {last}"
                        )));
                    }
                }
                Err(e) if e.is_timeout() => {
                    last = format!("timed out after {:?}", self.opts.timeout);
                }
                Err(e) => last = e.to_string(),
            }
            tracing::debug!(attempt, error = %last, "chat request failed");
        }
        Err(PolicyError::Unavailable(format!(
            "{url} after {} tries: {last}",
            self.opts.retries + 1
        )))
    }
}

/// The HTTP policy.
pub struct HttpPolicy {
    name: String,
    chat: ChatClient,
}

impl HttpPolicy {
    /// A policy called `name` talking to the server in `opts`.
    pub fn new(name: impl Into<String>, opts: HttpOptions) -> Result<HttpPolicy, PolicyError> {
        Ok(HttpPolicy {
            name: name.into(),
            chat: ChatClient::new(opts)?,
        })
    }

    /// The user message's parts, and its text (stored with the step).
    fn content(&self, input: &StepInput) -> Result<(Vec<Value>, String), PolicyError> {
        let built = prompt::build(input, &self.chat.opts.prompt, true);
        let mut content = Vec::new();
        for img in &built.images {
            let mut jpeg = Vec::new();
            img.to_rgb8()
                .write_to(&mut Cursor::new(&mut jpeg), image::ImageFormat::Jpeg)
                .map_err(|e| PolicyError::Failed(format!("encoding a screenshot: {e}")))?;
            content.push(image_part(&jpeg));
        }
        content.push(json!({"type": "text", "text": built.text}));
        Ok((content, built.text))
    }
}

impl Policy for HttpPolicy {
    fn name(&self) -> &str {
        &self.name
    }

    fn retries_own_calls(&self) -> bool {
        // `ChatClient::call` retries 5xx, 429, timeouts and refused connections.
        self.chat.opts.retries > 0
    }

    fn decide(&self, input: StepInput) -> BoxFuture<'_, Result<Decision, PolicyError>> {
        async move {
            let (content, prompt) = self.content(&input)?;
            let seed = input.seed ^ (u64::from(input.step) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let opts = &self.chat.opts;
            let regex = opts
                .constrained
                .map(|c| output_regex(&input.observation, opts.prompt.grounding, c));
            let (text, token_logprobs) = self.chat.complete_guided(content, seed, regex).await?;
            let viewport = input.observation.screenshot.viewport();
            let (thought, action) = parse_output(
                &text,
                opts.prompt.grounding,
                viewport.unwrap_or(opts.viewport),
            );
            Ok(Decision {
                action,
                thought,
                logprob: (!token_logprobs.is_empty())
                    .then(|| token_logprobs.iter().map(|l| f64::from(*l)).sum()),
                token_logprobs,
                raw_output: text,
                prompt: Some(prompt),
            })
        }
        .boxed()
    }
}
