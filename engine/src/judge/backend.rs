//! What answers the judge's questions: a vision-language model behind ONNX Runtime, or an
//! OpenAI-compatible server.

use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::json;

use inference::GenParams;
use inference::Model;
use inference::expand_images;
use policy::PolicyError;
use policy::http::{ChatClient, HttpOptions, image_part};
use policy::onnx::prompt;

/// Asks a model a question about some screenshots.
pub trait JudgeBackend: Send + Sync {
    /// The model's name (stored with its verdicts).
    fn name(&self) -> &str;
    /// The model's reply to `question` about `images` (JPEG).
    fn ask(
        &self,
        images: Vec<Vec<u8>>,
        question: String,
        seed: u64,
    ) -> BoxFuture<'_, Result<String, PolicyError>>;
}

/// A judge on the ONNX policy's model code (the same files and sessions a policy uses).
pub struct OnnxJudge {
    model: Arc<Mutex<Model>>,
    name: String,
    params: GenParams,
}

impl OnnxJudge {
    /// Samples at `temperature` (0, the default, is greedy: the seed does not matter).
    pub fn with_temperature(mut self, temperature: f32) -> OnnxJudge {
        self.params.temperature = temperature.max(0.0);
        self
    }

    /// A judge over a loaded model: greedy, `max_new_tokens` per answer.
    pub fn new(
        model: Arc<Mutex<Model>>,
        name: impl Into<String>,
        max_new_tokens: usize,
    ) -> OnnxJudge {
        OnnxJudge {
            model,
            name: name.into(),
            params: GenParams {
                max_new_tokens,
                temperature: 0.0,
                top_p: 1.0,
                stop: vec!["\n\n".into()],
            },
        }
    }
}

impl JudgeBackend for OnnxJudge {
    fn name(&self) -> &str {
        &self.name
    }

    fn ask(
        &self,
        images: Vec<Vec<u8>>,
        question: String,
        seed: u64,
    ) -> BoxFuture<'_, Result<String, PolicyError>> {
        let (model, params) = (self.model.clone(), self.params.clone());
        async move {
            tokio::task::spawn_blocking(move || {
                let mut m = model.lock().expect("model lock");
                let vision = m.has_vision();
                let decoded: Vec<::image::DynamicImage> = if vision {
                    images
                        .iter()
                        .filter_map(|b| ::image::load_from_memory(b).ok())
                        .collect()
                } else {
                    Vec::new()
                };
                let text =
                    prompt::render(&m.config().chat_template, &question, decoded.len(), vision)
                        .map_err(PolicyError::Failed)?;
                let p = expand_images(&text, &decoded, m.config())
                    .map_err(|e| PolicyError::Failed(e.to_string()))?;
                let out = m
                    .generate(&[p], &params, &[seed])
                    .map_err(|e| PolicyError::Failed(e.to_string()))?;
                Ok(out.into_iter().next().map(|g| g.text).unwrap_or_default())
            })
            .await
            .map_err(|e| PolicyError::Failed(format!("judge thread failed: {e}")))?
        }
        .boxed()
    }
}

/// A judge served by an OpenAI-compatible server.
pub struct HttpJudge {
    chat: ChatClient,
    name: String,
}

impl HttpJudge {
    /// A judge on the server in `opts`.
    pub fn new(opts: HttpOptions) -> Result<HttpJudge, PolicyError> {
        let name = opts.model.clone();
        Ok(HttpJudge {
            chat: ChatClient::new(opts)?,
            name,
        })
    }
}

impl JudgeBackend for HttpJudge {
    fn name(&self) -> &str {
        &self.name
    }

    fn ask(
        &self,
        images: Vec<Vec<u8>>,
        question: String,
        seed: u64,
    ) -> BoxFuture<'_, Result<String, PolicyError>> {
        async move {
            let mut content: Vec<serde_json::Value> =
                images.iter().map(|i| image_part(i)).collect();
            content.push(json!({"type": "text", "text": question}));
            Ok(self.chat.complete(content, seed).await?.text)
        }
        .boxed()
    }
}
