//! WebVoyager's JSONL: `{"web_name", "id", "ques", "web"}`, judged by a model.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{Converted, slug, str_field};
use crate::task::FieldError;

pub(super) fn convert(
    v: &Value,
    answers: &BTreeMap<String, String>,
) -> Result<Converted, Vec<FieldError>> {
    let id = str_field(v, "id")?;
    let web_name = str_field(v, "web_name")?;
    let ques = str_field(v, "ques")?;
    let web = str_field(v, "web")?;
    let mut spec = json!({
        "id": format!("webvoyager.{}", slug(id)),
        "site": slug(web_name),
        "instruction": ques,
        "start_url": web,
        "tags": ["webvoyager"],
        "rubric": {"groups": [{"id": "goal", "description": "the task is accomplished", "facts": [{
            "id": "goal.answered",
            "description": format!("The agent accomplished the task and its final answer correctly and completely answers: {ques}"),
            "check": {"type": "judge"}
        }]}]}
    });
    if let Some(a) = answers.get(id) {
        spec["reference_answer"] = json!(a);
    }
    Ok(spec.into())
}
