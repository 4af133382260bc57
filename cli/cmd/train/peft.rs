//! `surfgym train export-peft`: a LoRA version's adapter as a PEFT directory, for vLLM,
//! SGLang, transformers, or `serve-policy --load-root` (`/v1/load_lora_adapter`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

/// `surfgym train export-peft`.
#[derive(Args)]
pub struct ExportPeftArgs {
    /// A LoRA version (published by an update whose config had `lora`).
    pub version: PathBuf,
    /// The directory to write (`adapter_config.json`, `adapter_model.safetensors`).
    #[arg(long)]
    pub out: PathBuf,
}

/// Writes the PEFT directory.
pub fn export_peft(a: ExportPeftArgs) -> anyhow::Result<ExitCode> {
    if a.out.join(inference::peft::CONFIG).exists() {
        anyhow::bail!(
            "--out {}: already holds an adapter (choose an empty directory)",
            a.out.display()
        );
    }
    let adapter = inference::peft::version_adapter(&a.version)
        .context("reading the version's adapter (was it trained with `lora`?)")?;
    let base = inference::version::base_of(&a.version)
        .with_context(|| format!("{}: its base model", a.version.display()))?;
    inference::peft::export(&adapter, &base, &a.out)?;
    println!(
        "wrote a rank-{} LoRA adapter on {} matrices to {} (base model {})",
        adapter.meta.rank,
        adapter.pairs.len(),
        a.out.display(),
        base.display()
    );
    Ok(ExitCode::SUCCESS)
}
