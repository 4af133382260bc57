//! What an external trainer gave back, checked before anything is published: tensors
//! keyed by ONNX initializer names the base decoder trains, in its shapes and dtype, all
//! finite, become a policy version over the parent's weights; a served model name must be
//! one a server can be asked for without quoting.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use training::decoder::Decoder;
use training::version::{self, Publish};

use super::ExternalError;

/// The tensors' file in `OUTPUT`.
pub const WEIGHTS: &str = "weights.safetensors";
/// The served model's name in `OUTPUT`.
pub const SERVED_MODEL: &str = "served_model.txt";
/// The trainer's own report in `OUTPUT` (optional JSON, kept in the lineage).
pub const REPORT: &str = "report.json";
/// Longest served model name accepted.
const MAX_NAME: usize = 256;

/// The decoder of `parent` (the base with the parent version's tensors over it): what
/// returned tensors are checked against and laid over.
pub fn parent_decoder(parent: &Path) -> Result<Decoder, ExternalError> {
    let fail = |why: String| ExternalError::Output {
        path: parent.display().to_string(),
        why,
    };
    let base = version::base_of(parent).map_err(|e| fail(e.to_string()))?;
    let mut decoder = Decoder::load(&base, &Device::Cpu).map_err(|e| fail(e.to_string()))?;
    version::apply(parent, &mut decoder).map_err(|e| fail(e.to_string()))?;
    Ok(decoder)
}

/// Reads and checks `file` against `decoder`'s parameters: a subset of them by name, each
/// f32 in its shape, every value finite. Returns them by name (sorted).
pub fn read_weights(
    file: &Path,
    decoder: &Decoder,
) -> Result<Vec<(String, Tensor)>, ExternalError> {
    let fail = |why: String| ExternalError::Output {
        path: file.display().to_string(),
        why,
    };
    if !file.is_file() {
        return Err(fail(format!(
            "missing: the trainer must write {WEIGHTS} into SURFGYM_TRAIN_OUTPUT (trainer.returns is safetensors)"
        )));
    }
    let tensors: HashMap<String, Tensor> = candle_core::safetensors::load(file, &Device::Cpu)
        .map_err(|e| fail(format!("not a readable safetensors file ({e})")))?;
    if tensors.is_empty() {
        return Err(fail("holds no tensor".into()));
    }
    let params = decoder.params();
    let mut out: Vec<(String, Tensor)> = tensors.into_iter().collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, t) in &out {
        let Some(p) = params.get(name) else {
            let example = params
                .keys()
                .next()
                .map_or(String::new(), |k| format!(", e.g. `{k}`"));
            return Err(fail(format!(
                "tensor `{name}` is no trainable initializer of the base decoder (tensors are keyed by ONNX initializer name{example})"
            )));
        };
        if t.dtype() != DType::F32 {
            return Err(fail(format!(
                "tensor `{name}` is {:?}, the base decoder's is F32",
                t.dtype()
            )));
        }
        if t.dims() != p.as_tensor().dims() {
            return Err(fail(format!(
                "tensor `{name}` has shape {:?}, the base decoder's is {:?}",
                t.dims(),
                p.as_tensor().dims()
            )));
        }
        let values = t
            .flatten_all()
            .and_then(|f| f.to_vec1::<f32>())
            .map_err(|e| fail(format!("tensor `{name}`: {e}")))?;
        if values.iter().any(|x| !x.is_finite()) {
            return Err(fail(format!(
                "tensor `{name}` holds a NaN or infinite value"
            )));
        }
    }
    Ok(out)
}

/// Publishes `weights` over `decoder` (the parent's) as the version `out`, with `training`
/// as its lineage's record. Tensors the trainer did not return keep the parent's values.
pub fn publish(
    parent: &Path,
    out: &Path,
    mut decoder: Decoder,
    weights: &[(String, Tensor)],
    training: serde_json::Value,
) -> Result<(), ExternalError> {
    let fail = |why: String| ExternalError::Output {
        path: out.display().to_string(),
        why,
    };
    for (name, t) in weights {
        decoder
            .set(name, t)
            .map_err(|e| fail(format!("tensor `{name}`: {e}")))?;
    }
    version::publish(
        out,
        &decoder,
        Publish {
            parent,
            optimizer: None,
            training,
        },
    )
    .map_err(|e| fail(e.to_string()))?;
    Ok(())
}

/// Reads and checks the served model (or LoRA adapter) name in `file`: one line of at
/// most 256 letters, digits and `. _ - / : @ +`, not starting with `-` or `/`.
pub fn served_model(file: &Path) -> Result<String, ExternalError> {
    let fail = |why: String| ExternalError::Output {
        path: file.display().to_string(),
        why,
    };
    let text = std::fs::read_to_string(file).map_err(|e| {
        fail(format!(
            "cannot be read ({e}): the trainer must write the served model's name into {SERVED_MODEL} (trainer.returns is served_model)"
        ))
    })?;
    let name = text.trim();
    check_name(name).map_err(fail)?;
    Ok(name.to_string())
}

/// Whether `name` is a served model name surfgym will send.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the served model name is empty".into());
    }
    if name.len() > MAX_NAME {
        return Err(format!(
            "the served model name is {} bytes long (at most {MAX_NAME})",
            name.len()
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "._-/:@+".contains(*c)))
    {
        return Err(format!(
            "the served model name {name:?} holds {c:?} (letters, digits and . _ - / : @ + only)"
        ));
    }
    if name.starts_with('-') || name.starts_with('/') || name.split('/').any(|s| s == "..") {
        return Err(format!(
            "the served model name {name:?} must not start with - or / nor hold a .. segment"
        ));
    }
    Ok(())
}

/// The trainer's optional report (any JSON), kept in the lineage.
pub fn report(output: &Path) -> Result<Option<serde_json::Value>, ExternalError> {
    let path = output.join(REPORT);
    if !path.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&path).map_err(|e| ExternalError::io(&path, e))?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| ExternalError::Output {
            path: path.display().to_string(),
            why: format!("not JSON: {e}"),
        })
}

#[cfg(test)]
mod tests {
    use super::check_name;

    #[test]
    fn served_model_names_are_checked() {
        for good in ["run-1-v2", "org/model@lora:v3", "Qwen2.5-VL-7B+adapter_7"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for (bad, why) in [
            ("", "empty"),
            ("two words", "' '"),
            ("model\"; rm", "'\"'"),
            ("-v", "must not start"),
            ("/etc/passwd", "must not start"),
            ("a/../b", ".. segment"),
            ("naïve", "'ï'"),
        ] {
            let e = check_name(bad).unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
        assert!(
            check_name(&"a".repeat(257))
                .unwrap_err()
                .contains("at most 256")
        );
    }
}
