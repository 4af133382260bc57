//! The trainer on a chosen device, for machines that have a GPU but no Rust toolchain: build
//! it with `cargo build --release -p training --features cuda --example train_device` and
//! copy the binary. It runs what `surfgym bench train` runs (`training::bench::run`), and
//! first the agreement check against the CPU in f32 (`training::agreement`).
//!
//! ```text
//! train_device DEVICE MODEL_DIR [check|bench] [--precision P] [--batch N] [--prompt N]
//!              [--response N] [--steps N] [--micro-batch N] [--objective fbc|grpo]
//! ```
//! Prints one JSON line per result.

use std::path::PathBuf;
use std::process::ExitCode;

use training::bench::BenchShape;
use training::{Objective, Precision};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("train_device: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(device), Some(model)) = (args.first(), args.get(1)) else {
        return Err(
            "usage: train_device DEVICE MODEL_DIR [check|bench] [--precision P] \
                    [--batch N] [--prompt N] [--response N] [--steps N] [--objective O]"
                .into(),
        );
    };
    let mode = args.get(2).map_or("bench", String::as_str);
    let flag = |name: &str| -> Option<&str> {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .map(String::as_str)
    };
    let num = |name: &str, default: usize| -> Result<usize, String> {
        flag(name).map_or(Ok(default), |v| {
            v.parse()
                .map_err(|_| format!("{name}: not a number: {v:?}"))
        })
    };
    let device = training::parse_device(device)?;
    let model = PathBuf::from(model);
    let precision: Precision = flag("--precision").unwrap_or("auto").parse()?;
    let objective: Objective = flag("--objective").unwrap_or("fbc").parse()?;
    let shape = BenchShape {
        batch: num("--batch", 8)?,
        prompt: num("--prompt", 512)?,
        response: num("--response", 32)?,
        steps: num("--steps", 3)?,
        micro_batch: flag("--micro-batch")
            .map(|v| {
                v.parse()
                    .map_err(|_| format!("--micro-batch: not a number: {v:?}"))
            })
            .transpose()?,
        top_layers: None,
        group: num("--group", 1)?,
        share_prompts: true,
        lora: None,
        warm_up: 1,
    };
    let name = model
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let line = match mode {
        "check" => {
            let a = training::agreement::agreement(&model, shape, &device, precision)?;
            serde_json::json!({"model": name, "check": a})
        }
        "bench" => {
            let r = training::bench::run(&model, shape, objective, &device, precision)?;
            serde_json::json!({"model": name, "result": r})
        }
        other => return Err(format!("unknown mode {other:?} (check or bench)").into()),
    };
    println!("{line}");
    Ok(())
}
