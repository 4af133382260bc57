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
    /// Viewport the coordinates grid maps to.
    pub viewport: (u32, u32),
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
        }
    }
}

/// The HTTP policy.
pub struct HttpPolicy {
    name: String,
    client: reqwest::Client,
    opts: HttpOptions,
    slots: Arc<Semaphore>,
}

impl HttpPolicy {
    /// A policy called `name` talking to the server in `opts`.
    pub fn new(name: impl Into<String>, opts: HttpOptions) -> Result<HttpPolicy, PolicyError> {
        let client = reqwest::Client::builder()
            .timeout(opts.timeout)
            .build()
            .map_err(|e| PolicyError::Failed(format!("HTTP client: {e}")))?;
        Ok(HttpPolicy {
            name: name.into(),
            slots: Arc::new(Semaphore::new(opts.concurrency.max(1))),
            client,
            opts,
        })
    }

    fn body(&self, input: &StepInput) -> Result<Value, PolicyError> {
        let built = prompt::build(input, &self.opts.prompt, true);
        let mut content = Vec::new();
        for img in &built.images {
            let mut jpeg = Vec::new();
            img.to_rgb8()
                .write_to(&mut Cursor::new(&mut jpeg), image::ImageFormat::Jpeg)
                .map_err(|e| PolicyError::Failed(format!("encoding a screenshot: {e}")))?;
            let url = format!(
                "data:image/jpeg;base64,{}",
                base64::engine::general_purpose::STANDARD.encode(&jpeg)
            );
            content.push(json!({"type": "image_url", "image_url": {"url": url}}));
        }
        content.push(json!({"type": "text", "text": built.text}));
        let seed = input.seed ^ (u64::from(input.step) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        Ok(json!({
            "model": self.opts.model,
            "messages": [{"role": "user", "content": content}],
            "max_tokens": self.opts.max_tokens,
            "temperature": self.opts.temperature,
            "top_p": self.opts.top_p,
            "seed": seed >> 11,
            "logprobs": true
        }))
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
                            "the policy server refused the request: {last}"
                        )));
                    }
                }
                Err(e) => last = e.to_string(),
            }
            tracing::debug!(attempt, error = %last, "policy request failed");
        }
        Err(PolicyError::Unavailable(format!(
            "{url} after {} tries: {last}",
            self.opts.retries + 1
        )))
    }
}

impl Policy for HttpPolicy {
    fn name(&self) -> &str {
        &self.name
    }

    fn decide(&self, input: StepInput) -> BoxFuture<'_, Result<Decision, PolicyError>> {
        async move {
            let body = self.body(&input)?;
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
            let token_logprobs: Vec<f32> = choice["logprobs"]["content"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|t| t["logprob"].as_f64())
                        .map(|l| l as f32)
                        .collect()
                })
                .unwrap_or_default();
            let (thought, action) =
                parse_output(&text, self.opts.prompt.grounding, self.opts.viewport);
            Ok(Decision {
                action,
                thought,
                logprob: (!token_logprobs.is_empty())
                    .then(|| token_logprobs.iter().map(|l| f64::from(*l)).sum()),
                token_logprobs,
                raw_output: text,
            })
        }
        .boxed()
    }
}
