//! Model policies from the command line: `--onnx-model` (ONNX Runtime, in this process)
//! and `--policy-url` (an OpenAI-compatible server), and `surfgym serve-policy`.

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};
use engine::policy::http::{HttpOptions, HttpPolicy};
use engine::policy::onnx::grammar::Constraint;
use engine::policy::onnx::{self, Device, OnnxOptions, PromptConfig, PromptStyle};
use engine::policy::output::Grounding;
use engine::policy::{BatchLimits, PolicyRegistry};

use crate::Common;

/// Grounding mode.
#[derive(Clone, Copy, ValueEnum)]
pub enum GroundingArg {
    /// Numbered elements, drawn on the screenshot (set-of-marks).
    Marks,
    /// x, y on a 0-1000 grid over a plain screenshot.
    Coords,
}

/// Prompt style.
#[derive(Clone, Copy, ValueEnum)]
pub enum PromptArg {
    /// Context, then one action.
    Plain,
    /// Memory, progress, intention, action (WebGym).
    Structured,
}

/// Inference device.
#[derive(Clone, Copy, ValueEnum)]
pub enum DeviceArg {
    /// CPU.
    Cpu,
    /// CUDA, falling back to CPU.
    Cuda,
}

/// Options of the model policies.
#[derive(Args, Clone)]
pub struct ModelArgs {
    /// An ONNX model directory (onnx-community layout): registers the `onnx` policy.
    #[arg(long, global = true)]
    pub onnx_model: Option<PathBuf>,
    /// ONNX Runtime library (default: $ORT_DYLIB_PATH, or the wheel in the data dir's venv).
    #[arg(long, global = true)]
    pub ort_dylib: Option<PathBuf>,
    /// Where the ONNX policy runs.
    #[arg(long, value_enum, default_value = "cpu", global = true)]
    pub device: DeviceArg,
    /// How the model names what to act on.
    #[arg(long, value_enum, default_value = "marks", global = true)]
    pub grounding: GroundingArg,
    /// Prompt style.
    #[arg(long, value_enum, default_value = "plain", global = true)]
    pub prompt: PromptArg,
    /// Screenshots in a prompt (the current one and earlier ones).
    #[arg(long, default_value_t = 1, global = true)]
    pub prompt_images: usize,
    /// Sampling temperature (0: greedy).
    #[arg(long, default_value_t = 0.0, global = true)]
    pub temperature: f32,
    /// Nucleus sampling mass.
    #[arg(long, default_value_t = 1.0, global = true)]
    pub top_p: f32,
    /// Most tokens generated per action.
    #[arg(long, default_value_t = 96, global = true)]
    pub max_new_tokens: usize,
    /// ONNX policy: text the model's answer starts with (e.g. "Action:"), written after
    /// the chat template's generation prompt; the model only finishes the line.
    #[arg(long, default_value = "", global = true)]
    pub answer_prefix: String,
    /// Constrained decoding: the model may only write one action of the grammar, with an
    /// element number (or grid point) of the observation; every finished output parses.
    /// `action` (the default): the action alone; `reasoned`: free lines, then a last line
    /// `Action: <action>`. The `http` policy sends the grammar as `guided_regex` (vLLM,
    /// serve-policy).
    #[arg(long, global = true, value_enum, num_args = 0..=1, default_missing_value = "action")]
    pub constrained: Option<ConstrainedArg>,
    /// Largest batch of concurrent requests the ONNX policy (and serve-policy) runs together.
    #[arg(long, default_value_t = 8, global = true)]
    pub max_batch: usize,
    /// Longest a request waits for companions, ms.
    #[arg(long, default_value_t = 20, global = true)]
    pub max_wait_ms: u64,
    /// An OpenAI-compatible server: registers the `http` policy.
    #[arg(long, global = true)]
    pub policy_url: Option<String>,
    /// The `model` name sent to that server.
    #[arg(long, default_value = "default", global = true)]
    pub policy_model: String,
    /// Bearer token for that server.
    #[arg(
        long,
        env = "SURFGYM_POLICY_API_KEY",
        hide_env_values = true,
        global = true
    )]
    pub policy_api_key: Option<String>,
    /// An ONNX model directory for the model judge (facts written in words).
    #[arg(long, global = true)]
    pub judge_onnx_model: Option<PathBuf>,
    /// An OpenAI-compatible server for the model judge.
    #[arg(long, global = true)]
    pub judge_url: Option<String>,
    /// The `model` name sent to the judge server.
    #[arg(long, default_value = "default", global = true)]
    pub judge_model: String,
    /// Screenshots the judge sees per question (the last one always among them).
    #[arg(long, default_value_t = 3, global = true)]
    pub judge_screenshots: usize,
    /// The judge's sampling temperature: 0 (the default) is greedy decoding, the same
    /// verdict for the same trajectory; above 0 each call samples with its own seed.
    #[arg(long, default_value_t = 0.0, global = true)]
    pub judge_temperature: f32,
}

impl ModelArgs {
    fn prompt(&self) -> PromptConfig {
        PromptConfig {
            style: match self.prompt {
                PromptArg::Plain => PromptStyle::Plain,
                PromptArg::Structured => PromptStyle::Structured,
            },
            grounding: match self.grounding {
                GroundingArg::Marks => Grounding::Marks,
                GroundingArg::Coords => Grounding::Coordinates,
            },
            images: self.prompt_images.max(1),
            ..PromptConfig::default()
        }
    }

    /// ONNX options for `dir`.
    pub fn onnx_options(&self, common: &Common, dir: PathBuf) -> anyhow::Result<OnnxOptions> {
        let dylib = match &self.ort_dylib {
            Some(p) => p.clone(),
            None => onnx::find_ort_dylib(&common.data_dir).context(
                "ONNX Runtime not found: run ./scripts/setup-python.sh (installs the onnxruntime wheel), or set ORT_DYLIB_PATH",
            )?,
        };
        let mut o = OnnxOptions::new(dir, dylib);
        o.device = match self.device {
            DeviceArg::Cpu => Device::Cpu,
            DeviceArg::Cuda => Device::Cuda,
        };
        o.generation.max_new_tokens = self.max_new_tokens;
        o.answer_prefix = self.answer_prefix.clone();
        o.constrained = self.constrained.map(Constraint::from);
        o.generation.temperature = self.temperature;
        o.generation.top_p = self.top_p;
        o.prompt = self.prompt();
        Ok(o)
    }
}

/// Registers the model policies the options name.
pub fn register(common: &Common, policies: &mut PolicyRegistry) -> anyhow::Result<()> {
    let m = &common.models;
    if let Some(dir) = &m.onnx_model {
        let opts = m.onnx_options(common, dir.clone())?;
        let limits = BatchLimits {
            max_batch: m.max_batch.max(1),
            max_wait: Duration::from_millis(m.max_wait_ms),
        };
        let (policy, backend) = onnx::policy("onnx", opts, limits)
            .with_context(|| format!("loading the ONNX model in {}", dir.display()))?;
        let (provider, fallback) = backend.provider();
        println!(
            "onnx policy: {} on {provider}{}",
            dir.display(),
            fallback.map(|f| format!(" ({f})")).unwrap_or_default()
        );
        policies.register(Arc::new(policy));
    }
    if let Some(url) = &m.policy_url {
        let mut opts = HttpOptions::new(url.clone(), m.policy_model.clone());
        opts.api_key = m.policy_api_key.clone();
        opts.max_tokens = m.max_new_tokens as u32;
        opts.temperature = m.temperature;
        opts.top_p = m.top_p;
        opts.prompt = m.prompt();
        opts.constrained = m.constrained.map(Constraint::from);
        policies.register(Arc::new(
            HttpPolicy::new("http", opts).map_err(|e| anyhow::anyhow!("{e}"))?,
        ));
    }
    Ok(())
}

/// `surfgym serve-policy`.
#[derive(Args)]
pub struct ServePolicyArgs {
    /// The ONNX model directory to serve.
    #[arg(long)]
    pub model: PathBuf,
    /// The name it is listed under.
    #[arg(long, default_value = "surfgym-onnx")]
    pub name: String,
    /// Address to serve on.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub bind: IpAddr,
    /// Port (0: a free one).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
}

/// `surfgym serve-policy`.
pub async fn serve_policy(common: &Common, args: ServePolicyArgs) -> anyhow::Result<ExitCode> {
    let opts = common.models.onnx_options(common, args.model.clone())?;
    let backend = onnx::OnnxBackend::load(opts)
        .with_context(|| format!("loading {}", args.model.display()))?;
    let (provider, fallback) = backend.provider();
    let listener = tokio::net::TcpListener::bind((args.bind, args.port)).await?;
    println!(
        "serving {} on {provider}{} at http://{}/v1/chat/completions",
        args.model.display(),
        fallback.map(|f| format!(" ({f})")).unwrap_or_default(),
        listener.local_addr()?
    );
    let batching = web::policy_server::Batching {
        max_batch: common.models.max_batch.max(1),
        max_wait: Duration::from_millis(common.models.max_wait_ms),
        ..Default::default()
    };
    let server = web::policy_server::PolicyServer::start(backend.model(), args.name, batching)?;
    let app = web::policy_server::router(server);
    let server = tokio::spawn(async move { axum_serve(listener, app).await });
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        r = server => { r??; }
    }
    Ok(ExitCode::SUCCESS)
}

async fn axum_serve(listener: tokio::net::TcpListener, app: axum::Router) -> std::io::Result<()> {
    axum::serve(listener, app).await
}

/// The model judge the options name, if any.
pub fn model_judge(
    common: &Common,
    store: &engine::store::Store,
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

/// `--constrained` values.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConstrainedArg {
    /// The action alone.
    Action,
    /// Free lines of reasoning, then `Action: <action>`.
    Reasoned,
}

impl From<ConstrainedArg> for Constraint {
    fn from(c: ConstrainedArg) -> Constraint {
        match c {
            ConstrainedArg::Action => Constraint::Action,
            ConstrainedArg::Reasoned => Constraint::Reasoned,
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        models: ModelArgs,
    }

    #[test]
    fn constrained_takes_an_optional_mode() {
        let mode = |args: &[&str]| {
            let mut all = vec!["x"];
            all.extend_from_slice(args);
            Cli::try_parse_from(all).map(|c| c.models.constrained.map(Constraint::from))
        };
        assert_eq!(mode(&[]).unwrap(), None);
        assert_eq!(mode(&["--constrained"]).unwrap(), Some(Constraint::Action));
        assert_eq!(
            mode(&["--constrained", "reasoned"]).unwrap(),
            Some(Constraint::Reasoned)
        );
        assert!(mode(&["--constrained", "loose"]).is_err());
    }
}
