//! The model options every command takes (`--onnx-model`, `--policy-url`, the judge's, the
//! prompt's and sampling's), and their translation into the engine's ONNX options. Loading
//! a model or registering a policy is `crate::models`' work, not this module's.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, ValueEnum};
use inference::Device;
use inference::grammar::Constraint;
use policy::onnx::{OnnxOptions, PromptConfig, PromptStyle};
use policy::output::Grounding;
use spaces::ActionSet;

use super::Common;

/// `--actions click,type`: an action set.
fn parse_actions(text: &str) -> Result<ActionSet, String> {
    ActionSet::only(text.split(',').map(str::trim).filter(|n| !n.is_empty()))
        .map_err(|e| e.to_string())
}

/// Grounding mode.
#[derive(Clone, Copy, ValueEnum)]
pub enum GroundingArg {
    /// Numbered elements, drawn on the screenshot (set-of-marks).
    Marks,
    /// x, y on a 0-1000 grid over a plain screenshot.
    Coords,
}

/// Where an element line puts the element's number.
#[derive(Clone, Copy, ValueEnum)]
pub enum ElementsArg {
    /// `[4] button "Cancel"`.
    NumberFirst,
    /// `button "Cancel" [4]` (what a run's `policy.elements: "label_first"` trains on).
    LabelFirst,
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
    /// ONNX policy: where the prompt's element lines put the element's number.
    #[arg(long, value_enum, default_value = "number-first", global = true)]
    pub elements: ElementsArg,
    /// Prompt style.
    #[arg(long, value_enum, default_value = "plain", global = true)]
    pub prompt: PromptArg,
    /// Screenshots in a prompt (the current one and earlier ones).
    #[arg(long, default_value_t = 1, global = true)]
    pub prompt_images: usize,
    /// The kinds of action the model may take, comma-separated (`click` for click tasks;
    /// every kind when absent): the prompt lists only these and constrained decoding
    /// allows only these.
    // Its own id: `observe` has an `actions` argument of its own (`--act`).
    #[arg(long = "actions", id = "action_set", value_parser = parse_actions, global = true)]
    pub action_set: Option<ActionSet>,
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
    /// ONNX policy (and serve-policy): MiB of memory for prompt prefixes kept across
    /// requests, so a prompt that starts as an earlier one did (every step of an episode
    /// repeats its system text and task) runs only the rest; 0 turns the cache off.
    #[arg(long, default_value_t = 256, global = true)]
    pub prefix_cache_mb: usize,
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
    /// The server's model reads no images: send none, list the page's elements instead.
    #[arg(long, global = true)]
    pub policy_text_only: bool,
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
    /// The prompt these options describe.
    pub fn prompt(&self) -> PromptConfig {
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
            actions: self.action_set.unwrap_or_default(),
            elements: match self.elements {
                ElementsArg::NumberFirst => spaces::ElementFormat::NumberFirst,
                ElementsArg::LabelFirst => spaces::ElementFormat::LabelFirst,
            },
            ..PromptConfig::default()
        }
    }

    /// ONNX options for `dir`.
    pub fn onnx_options(&self, common: &Common, dir: PathBuf) -> anyhow::Result<OnnxOptions> {
        let dylib = match &self.ort_dylib {
            Some(p) => p.clone(),
            None => inference::find_ort_dylib(&common.data_dir).context(
                "ONNX Runtime not found: run ./scripts/setup-python.sh (installs the onnxruntime wheel), or set ORT_DYLIB_PATH",
            )?,
        };
        let mut o = OnnxOptions::new(dir, dylib);
        o.device = match self.device {
            DeviceArg::Cpu => Device::Cpu,
            DeviceArg::Cuda => Device::Cuda,
        };
        o.generation.max_new_tokens = self.max_new_tokens;
        o.prefix_cache_bytes = self.prefix_cache_mb << 20;
        o.answer_prefix = self.answer_prefix.clone();
        o.constrained = self.constrained.map(Constraint::from);
        o.generation.temperature = self.temperature;
        o.generation.top_p = self.top_p;
        o.prompt = self.prompt();
        Ok(o)
    }
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
