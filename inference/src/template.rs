//! The model's own chat template (Jinja, from its `tokenizer_config.json` or
//! `chat_template.json`), rendered the way `transformers` does: what makes a prompt this
//! model's. What goes into the prompt is the caller's business.

use minijinja::{Environment, Error, ErrorKind, context};
use serde_json::{Value, json};

/// Renders one user turn through the model's chat template, with a generation prompt.
/// Images are `{"type": "image"}` content parts (the template writes `<image>` for each).
pub fn render(template: &str, text: &str, images: usize, vision: bool) -> Result<String, String> {
    let mut env = Environment::new();
    env.add_function("raise_exception", |msg: String| -> Result<String, Error> {
        Err(Error::new(ErrorKind::InvalidOperation, msg))
    });
    env.add_template("chat", template)
        .map_err(|e| format!("chat template: {e}"))?;
    let content: Value = if vision {
        let mut parts: Vec<Value> = (0..images).map(|_| json!({"type": "image"})).collect();
        parts.push(json!({"type": "text", "text": text}));
        Value::Array(parts)
    } else {
        Value::String(text.to_string())
    };
    let messages = json!([{"role": "user", "content": content}]);
    env.get_template("chat")
        .and_then(|t| t.render(context! { messages => messages, add_generation_prompt => true, bos_token => "", eos_token => "" }))
        .map_err(|e| format!("chat template: {e}"))
}

/// Renders a whole chat (OpenAI-style messages whose image parts are `{"type": "image"}`)
/// through the model's template, with a generation prompt.
pub fn render_messages(template: &str, messages: &Value) -> Result<String, String> {
    let mut env = Environment::new();
    env.add_function("raise_exception", |msg: String| -> Result<String, Error> {
        Err(Error::new(ErrorKind::InvalidOperation, msg))
    });
    env.add_template("chat", template)
        .map_err(|e| format!("chat template: {e}"))?;
    env.get_template("chat")
        .and_then(|t| t.render(context! { messages => messages, add_generation_prompt => true, bos_token => "", eos_token => "" }))
        .map_err(|e| format!("chat template: {e}"))
}
