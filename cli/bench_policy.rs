//! `surfgym bench policy`: the ONNX policy's generation throughput on realistic prompts
//! (a 1280x720 screenshot and an element list), by batch size, and batched against
//! unbatched in the same run.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use browser_pool::{Element, Observation, Rect, Screenshot, ScrollState};
use clap::Args;
use engine::policy::StepInput;
use engine::policy::onnx::OnnxBackend;
use image::{Rgb, RgbImage};

use crate::Common;

/// Options of the policy benchmark.
#[derive(Args)]
pub struct PolicyArgs {
    /// Model directory (default: the generated tiny model in the data dir).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Batch sizes.
    #[arg(long, value_delimiter = ',', default_value = "1,4,8,16")]
    pub batch: Vec<usize>,
    /// Tokens generated per action.
    #[arg(long, default_value_t = 32)]
    pub tokens: usize,
    /// Repetitions per batch size.
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
}

fn observation(i: usize) -> Observation {
    let mut img = RgbImage::from_pixel(1280, 720, Rgb([245, 245, 245]));
    for y in 0..60 {
        for x in 0..1280 {
            img.put_pixel(x, y, Rgb([30, 60, (i * 37 % 255) as u8]));
        }
    }
    let mut jpeg = Vec::new();
    img.write_to(
        &mut std::io::Cursor::new(&mut jpeg),
        image::ImageFormat::Jpeg,
    )
    .expect("encode");
    let elements = (1..=20)
        .map(|n| Element {
            id: n,
            tag: "a".into(),
            role: "link".into(),
            label: format!("Product {n}"),
            value: None,
            placeholder: None,
            checked: None,
            disabled: false,
            options: vec![],
            href: None,
            input_type: None,
            bbox: Rect {
                x: 40.0,
                y: 80.0 + 30.0 * n as f64,
                width: 200.0,
                height: 24.0,
            },
            in_viewport: true,
        })
        .collect();
    Observation {
        url: "http://127.0.0.1:8702/products.html".into(),
        title: "Northwind Goods".into(),
        screenshot: Screenshot {
            bytes: jpeg,
            mime: "image/jpeg",
            width: 1280,
            height: 720,
            scale: 1.0,
        },
        elements,
        scroll: ScrollState {
            x: 0.0,
            y: 0.0,
            page_height: 720.0,
            viewport_height: 720.0,
        },
        last_action_error: None,
        ..Default::default()
    }
}

/// Runs the benchmark.
pub async fn run(common: &Common, args: PolicyArgs) -> anyhow::Result<ExitCode> {
    let dir = args
        .model
        .clone()
        .unwrap_or_else(|| common.data_dir.join("models/tiny-vlm"));
    let mut opts = common.models.onnx_options(common, dir.clone())?;
    opts.generation.max_new_tokens = args.tokens;
    // Measure full-length generations: no early stop.
    opts.generation.stop.clear();
    let backend = OnnxBackend::load(opts.clone()).with_context(|| {
        format!(
            "loading {} (./scripts/setup-python.sh generates the tiny model)",
            dir.display()
        )
    })?;
    let (provider, _) = backend.provider();
    let task = Arc::new(tasks::parse_task(
        r#"{"id": "bench", "instruction": "Add the blue mug to the cart", "start_url": "http://127.0.0.1:8702/",
            "rubric": {"groups": [{"facts": [{"check": {"type": "url", "prefix": "http"}}]}]}}"#,
    )
    .map_err(|e| anyhow::anyhow!("{e:?}"))?);
    let input = |i: usize| StepInput {
        instruction: task.instruction.as_str().into(),
        task: task.clone(),
        observation: Arc::new(observation(i)),
        history: Arc::from(Vec::new()),
        step: 0,
        max_steps: 10,
        seed: i as u64,
    };
    let model = backend.model();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "bench policy: {} on {provider}, {} new tokens per action, {cpus} CPUs",
        dir.display(),
        args.tokens
    );
    let prompts: Vec<_> = (0..args.batch.iter().copied().max().unwrap_or(1))
        .map(|i| backend.prompt_for(&input(i)))
        .collect::<Result<_, _>>()?;
    let prompt_tokens = model.lock().expect("model").encode(&prompts[0].text)?.len();
    println!("prompt: {prompt_tokens} tokens (one screenshot)");
    println!("| batch | s per call | ms per action | tokens/s | actions/s |");
    println!("|---|---|---|---|---|");
    let mut per_action_at_1 = None;
    let mut rows = Vec::new();
    for &b in &args.batch {
        let batch = prompts[..b].to_vec();
        let seeds: Vec<u64> = (0..b as u64).collect();
        let model = model.clone();
        let params = opts.generation.clone();
        let repeat = args.repeat.max(1);
        let (secs, tokens) =
            tokio::task::spawn_blocking(move || -> anyhow::Result<(f64, usize)> {
                let mut m = model.lock().expect("model");
                m.generate(&batch[..1], &params, &seeds[..1])?; // warm-up
                let t = Instant::now();
                let mut tokens = 0;
                for _ in 0..repeat {
                    tokens += m
                        .generate(&batch, &params, &seeds)?
                        .iter()
                        .map(|g| g.tokens.len())
                        .sum::<usize>();
                }
                Ok((t.elapsed().as_secs_f64() / repeat as f64, tokens / repeat))
            })
            .await??;
        let actions_per_s = b as f64 / secs;
        if b == 1 {
            per_action_at_1 = Some(actions_per_s);
        }
        println!(
            "| {b} | {secs:.3} | {:.0} | {:.1} | {actions_per_s:.2} |",
            secs * 1000.0 / b as f64,
            tokens as f64 / secs
        );
        rows.push((b, actions_per_s));
    }
    if let (Some(one), Some((b, best))) = (per_action_at_1, rows.last()) {
        println!(
            "\nbatched ({b}) vs unbatched throughput: {:.2}x",
            best / one
        );
    }
    Ok(ExitCode::SUCCESS)
}
