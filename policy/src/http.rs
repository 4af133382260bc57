//! A policy served over HTTP by any OpenAI-compatible chat-completions server (vLLM,
//! SGLang, hosted APIs, or `surfgym serve-policy`): screenshots go as base64 JPEG data URLs;
//! requests have a timeout, are retried with backoff when the server is unreachable or
//! overloaded, and are limited in number; log-probabilities are kept when returned, and the
//! generated token ids when the server reports them (vLLM's `return_tokens_as_token_ids`).
//!
//! Every episode sends its own request: a serving engine batches them continuously, so
//! nothing is gained by batching here.

use std::io::Cursor;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use base64::Engine as _;
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use super::onnx::prompt::{self, PromptConfig};
use super::output::parse_output;
use super::{Decision, Policy, PolicyError, StepInput};
use inference::grammar::{Constraint, output_regex};
use store::PolicyCard;
use store::Sampling;

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
    /// Whether the model reads screenshots. A text-only model (SmolLM2 on vLLM, tiny-text
    /// on `serve-policy`) is sent no images, and its prompt lists the page's elements
    /// instead, as the ONNX policy prompts a text model.
    pub vision: bool,
    /// Ask for the generated tokens' ids (`return_tokens_as_token_ids`, vLLM's parameter;
    /// `serve-policy` honours it too), stored with each step so a trainer rescores exactly
    /// what was sampled. A server that refuses the parameter (hosted APIs reject unknown
    /// fields) is asked again without it, and not asked for ids again.
    pub token_ids: bool,
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
            vision: true,
            token_ids: true,
        }
    }
}

/// A client for one OpenAI-compatible chat-completions server: timeouts, retries with
/// backoff, a limit on requests in flight. Shared by the HTTP policy and the model judge.
pub struct ChatClient {
    client: reqwest::Client,
    opts: HttpOptions,
    slots: Arc<Semaphore>,
    /// Cleared when the server refuses `return_tokens_as_token_ids`.
    ids_accepted: AtomicBool,
}

/// A reply: its text and, per generated token, what the server reported.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Completion {
    /// `choices[0].message.content`.
    pub text: String,
    /// Log-probability of each generated token (empty when the server sent none).
    pub token_logprobs: Vec<f32>,
    /// Each generated token's id, paired with `token_logprobs`: empty unless the server
    /// reported an id and a log-probability for every token.
    pub token_ids: Vec<u32>,
}

impl Completion {
    /// Reads `choices[0]` of a chat-completions response.
    fn of(resp: &Value) -> Result<Completion, PolicyError> {
        let choice = &resp["choices"][0];
        let text = choice["message"]["content"]
            .as_str()
            .ok_or_else(|| {
                PolicyError::Failed("the response has no choices[0].message.content".into())
            })?
            .to_string();
        let tokens = choice["logprobs"]["content"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let token_logprobs: Vec<f32> = tokens
            .iter()
            .filter_map(|t| t["logprob"].as_f64())
            .map(|l| l as f32)
            .collect();
        // vLLM writes each token as `token_id:<id>` when asked; anything else (the token's
        // text) carries no id. Ids are kept only when every token has both, so the two lists
        // stay aligned.
        let token_ids = tokens
            .iter()
            .map(|t| {
                t["logprob"].as_f64()?;
                t["token"].as_str()?.strip_prefix("token_id:")?.parse().ok()
            })
            .collect::<Option<Vec<u32>>>()
            .unwrap_or_default();
        Ok(Completion {
            text,
            token_logprobs,
            token_ids,
        })
    }
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
            ids_accepted: AtomicBool::new(opts.token_ids),
            client,
            opts,
        })
    }

    /// The options it was made with.
    pub fn options(&self) -> &HttpOptions {
        &self.opts
    }

    /// The ids the server lists at `/v1/models` (a base model and, on vLLM or
    /// `serve-policy --load-root`, the adapters loaded at run time). One try: this is a
    /// check before work starts, and its error should say at once what is wrong.
    pub async fn models(&self) -> Result<Vec<String>, PolicyError> {
        let url = format!("{}/v1/models", self.opts.base_url.trim_end_matches('/'));
        let mut req = self.client.get(&url);
        if let Some(key) = &self.opts.api_key {
            req = req.bearer_auth(key);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| PolicyError::Unavailable(format!("{url}: {e}")))?;
        let status = resp.status();
        if !status.is_success() {
            return Err(PolicyError::Failed(format!(
                "{url}: {status}: {}",
                excerpt(&resp.text().await.unwrap_or_default())
            )));
        }
        let v: Value = resp
            .json()
            .await
            .map_err(|e| PolicyError::Failed(format!("{url}: unreadable: {e}")))?;
        Ok(v["data"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter_map(|m| m["id"].as_str().map(str::to_string))
            .collect())
    }

    /// One user turn (content parts) → the reply's text and per-token log-probabilities.
    /// Never asks for token ids (a judge has no use for them).
    pub async fn complete(
        &self,
        content: Vec<Value>,
        seed: u64,
    ) -> Result<Completion, PolicyError> {
        self.request(content, seed, None, false).await
    }

    /// [`ChatClient::complete`] for a policy: the output held to `regex` by the server
    /// when given, and the token ids asked for when the options say so.
    pub async fn complete_guided(
        &self,
        content: Vec<Value>,
        seed: u64,
        regex: Option<String>,
    ) -> Result<Completion, PolicyError> {
        self.request(content, seed, regex, true).await
    }

    async fn request(
        &self,
        content: Vec<Value>,
        seed: u64,
        regex: Option<String>,
        want_ids: bool,
    ) -> Result<Completion, PolicyError> {
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
        let ask_ids = want_ids && self.ids_accepted.load(Ordering::Relaxed);
        if ask_ids {
            body[IDS_PARAM] = json!(true);
        }
        let _slot = self
            .slots
            .acquire()
            .await
            .map_err(|_| PolicyError::Unavailable("client closed".into()))?;
        let resp = match self.call(&body).await {
            Err(CallError::Refused { status: 400, body: text }) if ask_ids && text.contains(IDS_PARAM) => {
                // A server that does not know vLLM's parameter (hosted APIs reject unknown
                // fields): ask again without it, and stop asking.
                if self.ids_accepted.swap(false, Ordering::Relaxed) {
                    tracing::warn!(url = %self.opts.base_url, "the server refuses {IDS_PARAM}: steps will store no token ids");
                }
                body.as_object_mut().map(|b| b.remove(IDS_PARAM));
                self.call(&body).await
            }
            other => other,
        }
        .map_err(PolicyError::from)?;
        Completion::of(&resp)
    }

    async fn call(&self, body: &Value) -> Result<Value, CallError> {
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
                        .map_err(|e| CallError::Unreadable(e.to_string()));
                }
                Ok(resp) => {
                    let status = resp.status();
                    let text = resp.text().await.unwrap_or_default();
                    if !(status.is_server_error() || status.as_u16() == 429) {
                        return Err(CallError::Refused {
                            status: status.as_u16(),
                            body: text,
                        });
                    }
                    last = format!("{status}: {}", excerpt(&text));
                }
                Err(e) if e.is_timeout() => {
                    last = format!("timed out after {:?}", self.opts.timeout);
                }
                Err(e) => last = e.to_string(),
            }
            tracing::debug!(attempt, error = %last, "chat request failed");
        }
        Err(CallError::Unavailable(format!(
            "{url} after {} tries: {last}",
            self.opts.retries + 1
        )))
    }
}

/// A base URL as it may be stored and shown: `user:password@` taken out.
fn without_credentials(base: &str) -> String {
    match reqwest::Url::parse(base) {
        Ok(mut u) if !u.username().is_empty() || u.password().is_some() => {
            // Both succeed on any URL that had them.
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.to_string()
        }
        _ => base.to_string(),
    }
}

/// vLLM's request field asking for tokens as `token_id:<id>`.
const IDS_PARAM: &str = "return_tokens_as_token_ids";

/// The first 300 characters of a response body, for error messages.
fn excerpt(text: &str) -> String {
    text.chars().take(300).collect()
}

/// Why one chat request got no reply to read.
enum CallError {
    /// A 4xx other than 429: the request itself is wrong; retrying cannot help.
    Refused { status: u16, body: String },
    /// Unreachable, overloaded or timing out after every retry.
    Unavailable(String),
    /// A success status whose body is not JSON.
    Unreadable(String),
}

impl From<CallError> for PolicyError {
    fn from(e: CallError) -> PolicyError {
        match e {
            CallError::Refused { status, body } => PolicyError::Failed(format!(
                "the server refused the request: {status}: {}",
                excerpt(&body)
            )),
            CallError::Unavailable(why) => PolicyError::Unavailable(why),
            CallError::Unreadable(why) => {
                PolicyError::Failed(format!("unreadable response: {why}"))
            }
        }
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
        let built = prompt::build(
            input,
            &self.chat.opts.prompt,
            self.chat.opts.vision,
            self.chat.opts.constrained,
        );
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

    fn card(&self) -> PolicyCard {
        let o = &self.chat.opts;
        let mut card = PolicyCard::new(&self.name, "http");
        card.model = Some(o.model.clone());
        card.endpoint = Some(without_credentials(&o.base_url));
        card.sampling = Some(Sampling {
            temperature: o.temperature,
            top_p: o.top_p,
            max_tokens: o.max_tokens,
        });
        card.settings = o.prompt.describe();
        card.with(
            "constrained",
            super::onnx::describe_constraint(o.constrained),
        )
        .with("vision", o.vision)
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
            let grounding = prompt::effective_grounding(opts.prompt.grounding, opts.vision);
            let regex = opts
                .constrained
                .map(|c| output_regex(&input.observation, grounding, c, opts.prompt.actions));
            let reply = self.chat.complete_guided(content, seed, regex).await?;
            let viewport = input.observation.screenshot.viewport();
            let (thought, action) =
                parse_output(&reply.text, grounding, viewport.unwrap_or(opts.viewport));
            Ok(Decision {
                action: crate::output::within(action, opts.prompt.actions),
                thought,
                logprob: (!reply.token_logprobs.is_empty())
                    .then(|| reply.token_logprobs.iter().map(|l| f64::from(*l)).sum()),
                token_logprobs: reply.token_logprobs,
                token_ids: reply.token_ids,
                raw_output: reply.text,
                prompt: Some(prompt),
            })
        }
        .boxed()
    }
}
