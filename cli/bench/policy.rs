//! `surfgym bench policy`: the ONNX policy's throughput on realistic prompts (a 1280x720
//! screenshot and an element list) through the engine's batching queue, as rollouts use it:
//! for each batch size, that many concurrent episodes each ask for actions one after the
//! other; the queue batches them dynamically. Tokens/s, per-action latency (p50, p90), and
//! the best batched throughput against batch 1, measured in the same run. Then a GRPO
//! group: k samples of one prompt in one batch, with its prefill run once and shared, and
//! run for every row, in the same run. Then an episode: its steps' prompts one after the
//! other (one task, a page per step, the earlier steps listed), with and without the
//! prefix cache: prompt tokens prefilled, taken from the cache, and step latency.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use browser_pool::{Element, Observation, Rect, Screenshot, ScrollState};
use clap::Args;
use image::{Rgb, RgbImage};
use inference::{GenParams, Prompt};
use policy::onnx::OnnxBackend;
use policy::{BatchLimits, Batched, Policy, StepInput};

use super::stats::{ms, nearest_rank};
use crate::args::Common;

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
    /// Actions each concurrent episode asks for, per batch size.
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// How long the queue waits for companions before running a partial batch.
    #[arg(long, default_value_t = 50)]
    pub max_wait_ms: u64,
    /// Samples in the GRPO-group measurement: one prompt, this many samples in one batch,
    /// its prefill shared and not (0: skip it).
    #[arg(long, default_value_t = 8)]
    pub group: usize,
    /// Groups timed each way.
    #[arg(long, default_value_t = 3)]
    pub group_rounds: usize,
    /// Steps of the episode measurement (0: skip it).
    #[arg(long, default_value_t = 8)]
    pub episode_steps: usize,
    /// Episodes timed each way (each with a fresh cache).
    #[arg(long, default_value_t = 2)]
    pub episode_rounds: usize,
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
            bbox: Rect {
                x: 40.0,
                y: 80.0 + 30.0 * n as f64,
                width: 200.0,
                height: 24.0,
            },
            in_viewport: true,
            ..Element::default()
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
    let input = |i: usize, observation: Arc<Observation>| StepInput {
        instruction: task.instruction.as_str().into(),
        task: task.clone(),
        observation,
        history: Arc::from(Vec::new()),
        step: 0,
        max_steps: 10,
        seed: i as u64,
        answered: None,
    };
    let backend = Arc::new(backend);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Batch 1 is the baseline the ratio needs, whatever the arguments say.
    let mut sizes: Vec<usize> = args.batch.iter().copied().filter(|b| *b > 0).collect();
    sizes.push(1);
    sizes.sort_unstable();
    sizes.dedup();
    let repeat = args.repeat.max(1);
    println!(
        "bench policy: {} on {provider}, {} new tokens per action, {cpus} CPUs, {repeat} actions per episode, queue wait {} ms",
        dir.display(),
        args.tokens,
        args.max_wait_ms
    );
    let observations: Vec<Arc<Observation>> = (0..sizes.last().copied().unwrap_or(1))
        .map(|i| Arc::new(observation(i)))
        .collect();
    let prompt_tokens = {
        let p = backend.prompt_for(&input(0, observations[0].clone()))?;
        backend
            .model()
            .lock()
            .expect("model")
            .encode(&p.text)?
            .len()
    };
    let shown = if backend.model().lock().expect("model").has_vision() {
        "one screenshot"
    } else {
        "text only"
    };
    println!("prompt: {prompt_tokens} tokens ({shown})");
    println!("| batch | actions | tokens/s | actions/s | latency p50 (ms) | latency p90 (ms) |");
    println!("|---|---|---|---|---|---|");
    let mut rows = Vec::new();
    for &b in &sizes {
        let queue = Batched::new(
            "bench",
            backend.clone(),
            BatchLimits {
                max_batch: b,
                max_wait: Duration::from_millis(args.max_wait_ms),
            },
        );
        // Warm-up through the same queue.
        queue
            .decide(input(0, observations[0].clone()))
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let t = Instant::now();
        let episodes = (0..b).map(|e| {
            let queue = &queue;
            let obs = observations[e].clone();
            let input = &input;
            async move {
                let mut out = Vec::with_capacity(repeat);
                for _ in 0..repeat {
                    let asked = Instant::now();
                    let d = queue
                        .decide(input(e, obs.clone()))
                        .await
                        .map_err(|e| anyhow::anyhow!("{e}"))?;
                    out.push((asked.elapsed(), d.token_logprobs.len()));
                }
                anyhow::Ok(out)
            }
        });
        let results = futures::future::try_join_all(episodes).await?;
        let wall = t.elapsed().as_secs_f64();
        let mut latencies: Vec<f64> = results.iter().flatten().map(|(l, _)| ms(*l)).collect();
        let tokens: usize = results.iter().flatten().map(|(_, n)| n).sum();
        latencies.sort_by(f64::total_cmp);
        let actions = latencies.len();
        let (tokens_per_s, actions_per_s) = (tokens as f64 / wall, actions as f64 / wall);
        println!(
            "| {b} | {actions} | {tokens_per_s:.1} | {actions_per_s:.2} | {:.0} | {:.0} |",
            nearest_rank(&latencies, 0.5),
            nearest_rank(&latencies, 0.9)
        );
        rows.push((b, tokens_per_s));
    }
    let one = rows.iter().find(|(b, _)| *b == 1).map(|r| r.1);
    let best = rows
        .iter()
        .filter(|(b, _)| *b > 1)
        .max_by(|x, y| x.1.total_cmp(&y.1));
    if let (Some(one), Some((b, best))) = (one, best) {
        println!(
            "\nbest batched (batch {b}) vs unbatched throughput: {:.2}x ({best:.1} vs {one:.1} tokens/s)",
            best / one
        );
    }
    if args.group > 1 {
        let prompt = backend.prompt_for(&input(0, observations[0].clone()))?;
        group(
            &backend,
            prompt,
            args.group,
            args.tokens,
            args.group_rounds.max(1),
        )?;
    }
    if args.episode_steps > 0 {
        let prompts: Vec<Prompt> = episode_inputs(&task, args.episode_steps)
            .iter()
            .map(|i| backend.prompt_for(i))
            .collect::<Result<_, _>>()?;
        episode(
            &backend,
            &prompts,
            args.tokens,
            args.episode_rounds.max(1),
            opts.prefix_cache_bytes
                .max(inference::DEFAULT_PREFIX_CACHE_BYTES),
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// An episode of `steps` steps as the policy sees it: one task, a page per step (its URL,
/// title and half its elements change), and the earlier steps listed.
fn episode_inputs(task: &Arc<tasks::Task>, steps: usize) -> Vec<StepInput> {
    let mut history: Vec<policy::PastStep> = Vec::new();
    let mut out = Vec::with_capacity(steps);
    for k in 0..steps {
        let mut obs = observation(k);
        obs.url = format!("http://127.0.0.1:8702/page-{k}.html");
        obs.title = format!("Northwind Goods, page {k}");
        for e in obs.elements.iter_mut().skip(10) {
            e.label = format!("Item {} of page {k}", e.id);
        }
        out.push(StepInput {
            instruction: task.instruction.as_str().into(),
            task: task.clone(),
            observation: Arc::new(obs.clone()),
            history: Arc::from(history.clone()),
            step: k as u32,
            max_steps: steps as u32,
            seed: 0,
            answered: None,
        });
        history.push(policy::PastStep {
            observation: None,
            screenshot: format!("shot-{k}"),
            thought: None,
            action: format!("click({})", 11 + k % 10),
            url: obs.url.clone(),
            title: obs.title.clone(),
            error: None,
        });
    }
    out
}

/// An episode's prompts one after the other, greedy, with the prefix cache off and on
/// (a fresh cache each episode): prompt tokens run and taken from the cache, step latency.
fn episode(
    backend: &OnnxBackend,
    prompts: &[Prompt],
    tokens: usize,
    rounds: usize,
    cache_bytes: usize,
) -> anyhow::Result<()> {
    let model = backend.model();
    let mut m = model.lock().expect("model");
    let params = GenParams {
        max_new_tokens: tokens,
        temperature: 0.0,
        top_p: 1.0,
        stop: Vec::new(),
    };
    let lens: Vec<usize> = prompts
        .iter()
        .map(|p| m.encode(&p.text).map(|ids| ids.len()))
        .collect::<Result<_, _>>()?;
    println!(
        "
episode: {} steps of one task (prompts of {}..{} tokens), {rounds} episodes each way",
        prompts.len(),
        lens.iter().min().unwrap_or(&0),
        lens.iter().max().unwrap_or(&0)
    );
    println!(
        "| prefix cache | step latency p50 (ms) | episode (s) | prompt tokens run per episode | taken from the cache | hit rate |"
    );
    println!("|---|---|---|---|---|---|");
    let mut p50 = Vec::new();
    let mut outputs: Vec<Vec<Vec<u32>>> = Vec::new();
    for on in [false, true] {
        let mut steps = Vec::new();
        let mut walls = Vec::new();
        let (mut run, mut cached, mut hits, mut lookups) = (0, 0, 0, 0);
        let mut tokens_out = Vec::new();
        for _ in 0..rounds {
            m.set_prefix_cache(if on { cache_bytes } else { 0 });
            let before = m.prefill_stats();
            let t = Instant::now();
            tokens_out.clear();
            for (i, p) in prompts.iter().enumerate() {
                let s = Instant::now();
                let g = m.generate(std::slice::from_ref(p), &params, &[i as u64])?;
                steps.push(ms(s.elapsed()));
                tokens_out.push(g[0].tokens.clone());
            }
            walls.push(t.elapsed().as_secs_f64());
            let after = m.prefill_stats();
            run += after.tokens - before.tokens;
            cached += after.cached - before.cached;
            if let Some(c) = m.prefix_cache_stats() {
                hits += c.hits;
                lookups += c.lookups;
            }
        }
        outputs.push(tokens_out.clone());
        steps.sort_by(f64::total_cmp);
        walls.sort_by(f64::total_cmp);
        let median = nearest_rank(&steps, 0.5);
        let rate = if lookups == 0 {
            "-".to_string()
        } else {
            format!("{:.2}", hits as f64 / lookups as f64)
        };
        println!(
            "| {} | {median:.0} | {:.2} | {} | {} | {rate} |",
            if on { "on" } else { "off" },
            nearest_rank(&walls, 0.5),
            run / rounds as u64,
            cached / rounds as u64,
        );
        p50.push(median);
    }
    m.set_prefix_cache(cache_bytes);
    println!(
        "
prefix cache on vs off: step latency {:.2}x faster at p50; greedy outputs {}",
        p50[0] / p50[1].max(f64::EPSILON),
        if outputs[0] == outputs[1] {
            "identical"
        } else {
            "DIFFER"
        }
    );
    Ok(())
}

/// A GRPO group's k samples of one prompt as one batch, timed with the prompt's prefill
/// shared by the rows and run for each.
fn group(
    backend: &OnnxBackend,
    prompt: Prompt,
    k: usize,
    tokens: usize,
    rounds: usize,
) -> anyhow::Result<()> {
    if !prompt.images.is_empty() {
        println!(
            "
group: skipped, the prompt has an image and prompts with images are not shared (measure a text model: --model DIR)"
        );
        return Ok(());
    }
    let model = backend.model();
    let mut m = model.lock().expect("model");
    let params = GenParams {
        max_new_tokens: tokens,
        temperature: 1.0,
        top_p: 1.0,
        stop: Vec::new(),
    };
    let batch = vec![prompt; k];
    let seeds: Vec<u64> = (0..k as u64).collect();
    // Sharing alone: the prefix cache would serve every row after the warm-up.
    let cache = m.prefix_cache_stats().map(|c| c.bytes);
    m.set_prefix_cache(0);
    println!(
        "
group: {k} samples of one prompt in one batch, {rounds} groups each way"
    );
    println!("| prefill | s per group (p50) | prompt tokens prefilled per group |");
    println!("|---|---|---|");
    let mut p50 = Vec::new();
    for share in [false, true] {
        m.set_prompt_sharing(share);
        m.generate(&batch, &params, &seeds)?;
        let before = m.prefill_stats().tokens;
        let mut times: Vec<f64> = (0..rounds)
            .map(|_| {
                let t = Instant::now();
                m.generate(&batch, &params, &seeds)?;
                anyhow::Ok(t.elapsed().as_secs_f64())
            })
            .collect::<Result<_, _>>()?;
        times.sort_by(f64::total_cmp);
        let median = nearest_rank(&times, 0.5);
        let prefilled = (m.prefill_stats().tokens - before) / rounds as u64;
        let how = if share { "shared" } else { "per row" };
        println!("| {how} | {median:.3} | {prefilled} |");
        p50.push(median);
    }
    m.set_prompt_sharing(true);
    if cache.is_some() {
        m.set_prefix_cache(inference::DEFAULT_PREFIX_CACHE_BYTES);
    }
    println!(
        "
shared vs per-row prefill: {:.2}x faster per group",
        p50[0] / p50[1].max(f64::EPSILON)
    );
    Ok(())
}
