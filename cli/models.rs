//! Model policies and the model judge from the command line's options: `--onnx-model`
//! (ONNX Runtime, in this process), `--policy-url` (an OpenAI-compatible server), and
//! `--judge-onnx-model` / `--judge-url`. Loads and registers; the options themselves are
//! `crate::args::model`'s.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use inference::grammar::Constraint;
use inference::version_link as inference_link;
use policy::http::{HttpOptions, HttpPolicy};
use policy::onnx;
use policy::{BatchLimits, Demonstrated, PolicyRegistry};

use crate::args::Common;

/// Registers the model policies the options name.
pub fn register(common: &Common, policies: &mut PolicyRegistry) -> anyhow::Result<()> {
    let m = &common.models;
    if let Some(dir) = &m.onnx_model {
        let opts = m.onnx_options(common, dir.clone())?;
        let limits = BatchLimits {
            max_batch: m.max_batch.max(1),
            max_wait: Duration::from_millis(m.max_wait_ms),
        };
        if inference_link::is_link(dir) {
            // A version link: new episodes run whatever version it names when they start.
            let policy = onnx::following("onnx", dir, opts, limits).map_err(|e| {
                anyhow::anyhow!("loading the ONNX model that {} names: {e}", dir.display())
            })?;
            println!(
                "onnx policy: follows {} (now {})",
                dir.display(),
                policy.serving().display()
            );
            policies.register(Arc::new(policy));
        } else {
            let (policy, backend) = onnx::policy("onnx", opts, limits)
                .with_context(|| format!("loading the ONNX model in {}", dir.display()))?;
            let (provider, fallback) = backend.provider();
            println!(
                "onnx policy: {} on {provider}{}",
                dir.display(),
                fallback.map(|f| format!(" ({f})")).unwrap_or_default()
            );
            policies.register(Arc::new(policy));
            // Demonstrations for a warm start: a built-in teacher acts, each step recorded
            // as this model would have written it (`train step --objective fbc` on them).
            for teacher in ["scripted", "miniwob-solver"] {
                if let Some(t) = policies.get(teacher) {
                    policies.register(Arc::new(Demonstrated::new(
                        format!("demonstrated-{teacher}"),
                        t,
                        backend.clone(),
                    )));
                }
            }
        }
    }
    if let Some(url) = &m.policy_url {
        let mut opts = HttpOptions::new(url.clone(), m.policy_model.clone());
        opts.api_key = m.policy_api_key.clone();
        opts.max_tokens = m.max_new_tokens as u32;
        opts.temperature = m.temperature;
        opts.top_p = m.top_p;
        opts.prompt = m.prompt();
        opts.constrained = m.constrained.map(Constraint::from);
        opts.vision = !m.policy_text_only;
        policies.register(Arc::new(
            HttpPolicy::new("http", opts).map_err(|e| anyhow::anyhow!("{e}"))?,
        ));
    }
    Ok(())
}

/// The model judge the options name, if any.
pub fn model_judge(
    common: &Common,
    store: &store::Store,
) -> anyhow::Result<Option<Arc<engine::judge::ModelJudge>>> {
    use engine::judge::{HttpJudge, JudgeBackend, JudgeConfig, ModelJudge, OnnxJudge};
    let m = &common.models;
    let backend: Arc<dyn JudgeBackend> = match (&m.judge_onnx_model, &m.judge_url) {
        (Some(_), Some(_)) => anyhow::bail!("give --judge-onnx-model or --judge-url, not both"),
        (Some(dir), None) => {
            let opts = m.onnx_options(common, dir.clone())?;
            let backend = onnx::OnnxBackend::load(opts)
                .with_context(|| format!("loading the judge model in {}", dir.display()))?;
            let name = dir
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("onnx")
                .to_string();
            Arc::new(
                OnnxJudge::new(backend.model(), name, 64).with_temperature(m.judge_temperature),
            )
        }
        (None, Some(url)) => {
            let mut opts = HttpOptions::new(url.clone(), m.judge_model.clone());
            opts.api_key = m.policy_api_key.clone();
            opts.max_tokens = 64;
            opts.temperature = m.judge_temperature.max(0.0);
            Arc::new(HttpJudge::new(opts).map_err(|e| anyhow::anyhow!("{e}"))?)
        }
        (None, None) => return Ok(None),
    };
    let cfg = JudgeConfig {
        max_screenshots: m.judge_screenshots.max(1),
    };
    println!("model judge: {}", backend.name());
    Ok(Some(Arc::new(ModelJudge::new(
        backend,
        cfg,
        Some(store.clone()),
    ))))
}
