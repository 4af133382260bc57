//! The ONNX policy on the tiny generated VLM (same files and signatures as the
//! onnx-community SmolVLM exports) through a real ONNX Runtime session: deterministic
//! generation, batched equals unbatched, stop texts, log-probabilities that a teacher-forced
//! pass reproduces, CPU fallback logged.
//! `scripts/setup-python.sh` generates the model and installs ONNX Runtime.

use std::sync::Arc;
use std::time::Duration;

use browser_pool::{Observation, Rect};
use inference::Device;
use inference::Finish;
use inference::GenParams;
use inference::Prompt;
use policy::onnx::{OnnxBackend, OnnxOptions};
use policy::{Policy, StepInput};

use crate::common;

use common::data_dir;

fn options() -> OnnxOptions {
    let data = data_dir();
    let dylib =
        inference::find_ort_dylib(&data).expect("ONNX Runtime: run ./scripts/setup-python.sh");
    let model = data.join("models/tiny-vlm");
    assert!(
        model.join("onnx/decoder_model_merged.onnx").exists(),
        "tiny model missing: run ./scripts/setup-python.sh"
    );
    let mut o = OnnxOptions::new(model, dylib);
    o.generation.max_new_tokens = 12;
    o
}

fn observation(shade: u8, labels: usize) -> Observation {
    Observation {
        url: "http://127.0.0.1:1/".into(),
        title: "Page".into(),
        screenshot: common::gradient_screenshot(1280, 720, shade),
        elements: (1..=labels as u32)
            .map(|n| {
                let bbox = Rect {
                    x: 10.0 * n as f64,
                    y: 20.0 * n as f64,
                    width: 80.0,
                    height: 20.0,
                };
                common::button(n, &format!("Button number {n}"), bbox)
            })
            .collect(),
        scroll: common::unscrolled(720.0),
        last_action_error: None,
        ..Default::default()
    }
}

fn input(seed: u64, shade: u8, labels: usize) -> StepInput {
    common::step_input("Press the third button", observation(shade, labels), seed)
}

fn prompts(backend: &OnnxBackend) -> Vec<Prompt> {
    // Different element lists give prompts of different lengths: the batch is left-padded.
    vec![
        backend.prompt_for(&input(1, 10, 2)).unwrap(),
        backend.prompt_for(&input(2, 200, 9)).unwrap(),
        backend.prompt_for(&input(3, 90, 5)).unwrap(),
    ]
}

#[test]
fn generation_is_deterministic_and_batched_equals_unbatched() {
    let backend = OnnxBackend::load(options()).unwrap();
    let ps = prompts(&backend);
    let model = backend.model();
    let mut m = model.lock().unwrap();
    assert!(m.has_vision());
    let lens: Vec<usize> = ps
        .iter()
        .map(|p| m.encode(&p.text).unwrap().len())
        .collect();
    assert!(
        lens[0] != lens[1] && lens[1] != lens[2],
        "prompt lengths differ: {lens:?}"
    );
    for params in [
        GenParams {
            max_new_tokens: 12,
            temperature: 0.0,
            top_p: 1.0,
            stop: vec![],
        },
        GenParams {
            max_new_tokens: 12,
            temperature: 0.9,
            top_p: 0.9,
            stop: vec![],
        },
    ] {
        let batched = common::assert_batch_invariant(&mut m, &ps, &params, &[11, 22, 33]);
        for g in &batched {
            assert_eq!(g.logprobs.len(), g.tokens.len());
            assert!(
                g.logprobs.iter().all(|l| l.is_finite() && *l <= 0.0),
                "{:?}",
                g.logprobs
            );
        }
    }
    let sampled = GenParams {
        max_new_tokens: 12,
        temperature: 1.5,
        top_p: 1.0,
        stop: vec![],
    };
    let outs: std::collections::HashSet<Vec<u32>> = (0..6)
        .map(|s| {
            m.generate(&ps[..1], &sampled, &[s])
                .unwrap()
                .remove(0)
                .tokens
        })
        .collect();
    assert!(outs.len() > 1, "different seeds sample differently");
}

/// Recomputes each generated token's log-probability with one teacher-forced pass over
/// prompt and output (no KV cache), independently of the decoding loop that recorded it.
fn assert_scores_match(m: &mut inference::Model, p: &Prompt, tokens: &[u32], logprobs: &[f32]) {
    let scored = m.score(p, tokens).unwrap();
    assert_eq!(scored.len(), logprobs.len());
    for (j, (a, b)) in scored.iter().zip(logprobs).enumerate() {
        assert!((a - b).abs() < 1e-3, "token {j}: scored {a}, recorded {b}");
    }
}

#[test]
fn recorded_logprobs_match_a_teacher_forced_forward_pass() {
    let backend = OnnxBackend::load(options()).unwrap();
    let ps = prompts(&backend);
    let model = backend.model();
    let mut m = model.lock().unwrap();
    // Sampled (not just the argmax) and batched with left padding: each sequence's recorded
    // log-probabilities are those of the model's distribution at temperature 1.
    let params = GenParams {
        max_new_tokens: 12,
        temperature: 1.2,
        top_p: 0.95,
        stop: vec![],
    };
    let outs = m.generate(&ps, &params, &[5, 6, 7]).unwrap();
    for (p, g) in ps.iter().zip(&outs) {
        assert!(!g.tokens.is_empty());
        assert_scores_match(&mut m, p, &g.tokens, &g.logprobs);
    }
    // A different continuation scores differently: the check can fail.
    let mut other = outs[0].tokens.clone();
    other[0] = (other[0] + 1) % 400;
    let scored = m.score(&ps[0], &other).unwrap();
    assert!((scored[0] - outs[0].logprobs[0]).abs() > 1e-3);
}

/// An earlier output of the model carrying NUL (pages and a freely decoding model can
/// produce it; Postgres stores it as U+FFFD): the prompt the model is given is the prompt
/// that is recorded (and its tokens rescore to the recorded log-probabilities on it).
#[test]
fn a_prompt_with_nul_is_given_to_the_model_as_it_is_stored() {
    let backend = OnnxBackend::load(options()).unwrap();
    let mut obs = observation(40, 2);
    obs.title = "Pa\0ge".into();
    let mut step = input(9, 40, 2);
    step.observation = Arc::new(obs);
    step.history = Arc::from(vec![policy::PastStep {
        observation: None,
        screenshot: "0".repeat(64),
        thought: None,
        // What a failed parse shows of the output.
        action: "x\0\0y".into(),
        url: "http://127.0.0.1:1/".into(),
        title: "Pa\0ge".into(),
        error: Some("no action found".into()),
    }]);
    step.step = 1;
    let p = backend.prompt_for(&step).unwrap();
    assert!(!p.rendered.contains('\0') && !p.text.contains('\0'));
    assert!(p.rendered.contains("x\u{FFFD}\u{FFFD}y"), "{}", p.rendered);
    let d = backend
        .decide_all(std::slice::from_ref(&step))
        .unwrap()
        .remove(0)
        .unwrap();
    let stored = d.prompt.clone().unwrap();
    assert_eq!(stored, p.rendered);
    let model = backend.model();
    let mut m = model.lock().unwrap();
    assert_scores_match(&mut m, &p, &d.token_ids, &d.token_logprobs);
}

#[test]
fn stop_texts_end_generation_and_are_cut_from_the_text() {
    let backend = OnnxBackend::load(options()).unwrap();
    let ps = prompts(&backend);
    let model = backend.model();
    let mut m = model.lock().unwrap();
    let free = GenParams {
        max_new_tokens: 24,
        temperature: 0.0,
        top_p: 1.0,
        stop: vec![],
    };
    let full = m.generate(&ps[..1], &free, &[0]).unwrap().remove(0);
    assert_eq!(full.finish, Finish::Length);
    // A two-character stop text from the second half of the free output.
    let chars: Vec<char> = full.text.chars().collect();
    assert!(chars.len() >= 6, "the tiny model wrote {:?}", full.text);
    let i = (chars.len() / 2..chars.len() - 1)
        .find(|&i| chars[i].is_ascii_graphic() && chars[i + 1].is_ascii_graphic())
        .unwrap_or(chars.len() / 2);
    let stop: String = chars[i..i + 2].iter().collect();
    let cut = full.text.find(&stop).unwrap();
    let stopped = m
        .generate(
            &ps[..1],
            &GenParams {
                stop: vec!["never appears \u{1}".into(), stop.clone()],
                ..free.clone()
            },
            &[0],
        )
        .unwrap()
        .remove(0);
    assert_eq!(
        stopped.finish,
        Finish::Stop,
        "stop {stop:?} in {:?}",
        full.text
    );
    assert_eq!(
        stopped.text,
        full.text[..cut],
        "cut at the stop text {stop:?}"
    );
    assert!(
        stopped.tokens.len() < full.tokens.len() && full.tokens.starts_with(&stopped.tokens),
        "generation ended at the token that completed the stop text"
    );
    assert_eq!(stopped.logprobs.len(), stopped.tokens.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decisions_carry_text_and_consistent_logprobs() {
    let backend = Arc::new(OnnxBackend::load(options()).unwrap());
    let policy = policy::Batched::new(
        "onnx",
        backend.clone(),
        policy::BatchLimits {
            max_batch: 4,
            max_wait: Duration::from_millis(10),
        },
    );
    let inputs: Vec<StepInput> = (0..3).map(|i| input(i, 50 + i as u8 * 40, 3)).collect();
    let decisions =
        futures::future::join_all(inputs.iter().map(|i| policy.decide(i.clone()))).await;
    let model = backend.model();
    for (input, d) in inputs.iter().zip(decisions) {
        let d = d.unwrap();
        assert!(!d.token_logprobs.is_empty());
        let sum: f64 = d.token_logprobs.iter().map(|l| f64::from(*l)).sum();
        assert!(
            (d.logprob.unwrap() - sum).abs() < 1e-6,
            "the action's logprob is the sum of its tokens'"
        );
        // The stored per-token values are the model's: the options are greedy, so the same
        // prompt alone gives the same tokens, which a teacher-forced pass rescores.
        let p = backend.prompt_for(input).unwrap();
        // The stored prompt is the one generated from, before its images were expanded.
        assert_eq!(d.prompt.as_deref(), Some(p.rendered.as_str()));
        assert!(
            p.rendered.contains("Press the third button"),
            "{}",
            p.rendered
        );
        assert!(p.text.len() > p.rendered.len(), "image tokens expanded");
        let mut m = model.lock().unwrap();
        let alone = m
            .generate(std::slice::from_ref(&p), &options().generation, &[0])
            .unwrap()
            .remove(0);
        assert_eq!(alone.text, d.raw_output);
        assert_eq!(
            d.token_ids, alone.tokens,
            "the decision keeps the sampled ids"
        );
        // What a trainer does with a stored step: rescore its prompt and token ids.
        assert_scores_match(&mut m, &p, &d.token_ids, &d.token_logprobs);
        // A random-weight model writes nonsense: that must be an error message, not a panic.
        if let Err(e) = &d.action {
            assert!(!e.is_empty());
        }
    }
}

/// An answer prefix is written after the generation prompt, starts the decision's output
/// and is parsed with it; the model only generates what follows (and only that is scored).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_prefix_starts_the_answer_and_is_parsed_with_it() {
    let plain = OnnxBackend::load(options()).unwrap();
    let mut o = options();
    // A whole action line: whatever the random model writes after it cannot take it away
    // (the parser reads the last `Action:` line, and a newline ends this one).
    o.answer_prefix = "Action: click(2)\n".into();
    let prefixed = OnnxBackend::load(o).unwrap();
    let step = input(7, 90, 3);

    let without = plain.prompt_for(&step).unwrap();
    let with = prefixed.prompt_for(&step).unwrap();
    assert_eq!(with.text, format!("{}Action: click(2)\n", without.text));

    let prefixed = Arc::new(prefixed);
    let policy = policy::Batched::new(
        "onnx",
        prefixed.clone(),
        policy::BatchLimits {
            max_batch: 1,
            max_wait: Duration::ZERO,
        },
    );
    let d = policy.decide(step).await.unwrap();
    assert!(
        d.raw_output.starts_with("Action: click(2)\n"),
        "{:?}",
        d.raw_output
    );
    assert_eq!(
        d.action,
        Ok(browser_pool::Action::Click(browser_pool::Target::Element(
            2
        ))),
        "{:?}",
        d.raw_output
    );
    // Only sampled tokens carry log-probabilities; the prefix is prompt.
    let alone = prefixed
        .model()
        .lock()
        .unwrap()
        .generate(std::slice::from_ref(&with), &options().generation, &[0])
        .unwrap()
        .remove(0);
    assert_eq!(format!("Action: click(2)\n{}", alone.text), d.raw_output);
    assert_eq!(d.token_logprobs, alone.logprobs);
    assert_eq!(
        d.token_ids, alone.tokens,
        "the prefix's tokens are not sampled ones"
    );
}

/// Collects what the tracing subscriber writes.
#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn asking_for_cuda_without_a_gpu_falls_back_to_cpu_with_a_reason() {
    let log = Captured::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let mut o = options();
    o.device = Device::Cuda;
    let backend = tracing::subscriber::with_default(subscriber, || OnnxBackend::load(o).unwrap());
    let (provider, reason) = backend.provider();
    assert_eq!(provider, "CPU");
    let reason = reason.unwrap();
    assert!(reason.to_lowercase().contains("cuda"));
    let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("falling back to CPU"))
        .unwrap_or_else(|| panic!("no fallback line in the log:\n{text}"));
    assert!(line.contains("WARN"), "{line}");
    assert!(line.contains(&reason), "the line says why: {line}");
}

/// Constrained decoding: a random-weight model, sampled, writes only actions of the grammar
/// with element numbers of the observation; finished outputs parse, unfinished ones can
/// still become an action, and each recorded log-probability is that of the constrained
/// distribution (what teacher-forced scoring under the grammar gives; at least the model's
/// own, renormalised over the allowed tokens).
#[test]
fn constrained_decoding_writes_only_actions_the_observation_allows() {
    use inference::grammar::{ActionGrammar, action_pattern};
    use policy::output::{Grounding, check_elements, parse_output};

    let mut o = options();
    o.constrained = Some(inference::grammar::Constraint::Action);
    o.generation.max_new_tokens = 24;
    let backend = OnnxBackend::load(o).unwrap();
    let model = backend.model();
    let params = GenParams {
        max_new_tokens: 24,
        temperature: 1.0,
        top_p: 1.0,
        stop: vec![],
    };
    let step = input(5, 120, 4);
    let pattern = action_pattern(&step.observation, Grounding::Marks);
    let prompt = backend.prompt_for(&step).unwrap();
    assert!(prompt.grammar.is_some());
    let mut plain = prompt.clone();
    plain.grammar = None;
    let mut m = model.lock().unwrap();
    let mut finished = 0;
    let mut plain_parsed = 0;
    for seed in 0..12u64 {
        let g = m
            .generate(std::slice::from_ref(&prompt), &params, &[seed])
            .unwrap()
            .remove(0);
        let mut grammar = ActionGrammar::new(&pattern).unwrap();
        assert!(
            grammar.advance(g.text.as_bytes()),
            "seed {seed}: {:?} left the grammar",
            g.text
        );
        if g.finish == Finish::Eos {
            finished += 1;
            let (_, action) = parse_output(&g.text, Grounding::Marks, (1280, 720));
            let action = action.unwrap_or_else(|e| panic!("seed {seed}: {:?}: {e}", g.text));
            check_elements(action, &step.observation.elements)
                .unwrap_or_else(|e| panic!("seed {seed}: {:?}: {e}", g.text));
        } else {
            assert_eq!(g.finish, Finish::Length, "{:?}", g.text);
        }
        // A trainer rescoring the action under the same grammar gets what was recorded;
        // each token is at least as likely as under the unmasked model.
        assert_scores_match(&mut m, &prompt, &g.tokens, &g.logprobs);
        let unconstrained = m.score(&plain, &g.tokens).unwrap();
        for (j, (c, u)) in g.logprobs.iter().zip(&unconstrained).enumerate() {
            assert!(
                *c <= 1e-6 && *c >= u - 1e-3,
                "seed {seed} token {j}: constrained {c}, model {u}"
            );
        }
        let free = m
            .generate(std::slice::from_ref(&plain), &params, &[seed])
            .unwrap()
            .remove(0);
        plain_parsed += usize::from(
            parse_output(&free.text, Grounding::Marks, (1280, 720))
                .1
                .is_ok(),
        );
    }
    assert!(
        finished >= 3,
        "only {finished} of 12 outputs finished an action"
    );
    assert!(
        plain_parsed < finished,
        "unconstrained: {plain_parsed} parsed; constrained: {finished}"
    );
}

/// The k samples of a GRPO group are k requests with one prompt: in a batch they share one
/// prefill, and every row's tokens and log-probabilities are those it gets with a prefill
/// of its own. A prompt with an image is never shared (images are not compared).
#[test]
fn rows_with_one_prompt_share_its_prefill_and_generate_as_alone() {
    let data = data_dir();
    let dylib = inference::find_ort_dylib(&data).unwrap();
    let mut o = OnnxOptions::new(data.join("models/tiny-text"), dylib);
    o.generation.max_new_tokens = 12;
    let text = OnnxBackend::load(o).unwrap();
    let (a, b) = (
        text.prompt_for(&input(1, 10, 4)).unwrap(),
        text.prompt_for(&input(2, 10, 7)).unwrap(),
    );
    assert!(a.images.is_empty());
    let batch = vec![a.clone(), b, a.clone(), a.clone()];
    let seeds = [5, 6, 7, 8];
    let model = text.model();
    let mut m = model.lock().unwrap();
    let a_len = m.encode(&a.text).unwrap().len() as u64;
    for temperature in [0.0, 1.0] {
        let params = GenParams {
            max_new_tokens: 12,
            temperature,
            top_p: 1.0,
            stop: vec![],
        };
        m.set_prompt_sharing(false);
        let before = m.prefill_stats();
        let alone = m.generate(&batch, &params, &seeds).unwrap();
        assert_eq!(m.prefill_stats().saved, before.saved, "sharing is off");
        m.set_prompt_sharing(true);
        let before = m.prefill_stats();
        let shared = m.generate(&batch, &params, &seeds).unwrap();
        let after = m.prefill_stats();
        // Rows 2 and 3 repeat row 0's prompt.
        assert_eq!(after.saved - before.saved, 2 * a_len);
        for (row, (x, y)) in alone.iter().zip(&shared).enumerate() {
            assert_eq!(x.tokens, y.tokens, "row {row} at temperature {temperature}");
            for (p, q) in x.logprobs.iter().zip(&y.logprobs) {
                assert!((p - q).abs() < 1e-4, "row {row}: {p} vs {q}");
            }
        }
        if temperature > 0.0 {
            // Each row samples with its own seed from the shared cache.
            let distinct: std::collections::HashSet<&Vec<u32>> =
                [0, 2, 3].iter().map(|&r| &shared[r].tokens).collect();
            assert!(distinct.len() > 1, "the group's samples differ");
        }
    }
    drop(m);

    let vlm = OnnxBackend::load(options()).unwrap();
    let p = vlm.prompt_for(&input(3, 90, 5)).unwrap();
    assert!(!p.images.is_empty());
    let model = vlm.model();
    let mut m = model.lock().unwrap();
    let greedy = GenParams {
        max_new_tokens: 4,
        temperature: 0.0,
        top_p: 1.0,
        stop: vec![],
    };
    let out = m.generate(&[p.clone(), p], &greedy, &[1, 2]).unwrap();
    assert_eq!(out[0].tokens, out[1].tokens);
    assert_eq!(
        m.prefill_stats().saved,
        0,
        "prompts with images are not shared"
    );
}

/// Tokens equal, log-probabilities within 1e-4.
fn assert_same(want: &inference::Generation, got: &inference::Generation, what: &str) {
    assert_eq!(want.tokens, got.tokens, "{what}");
    for (p, q) in want.logprobs.iter().zip(&got.logprobs) {
        assert!((p - q).abs() < 1e-4, "{what}: {p} vs {q}");
    }
}

/// Prompt prefixes cached across requests: a prompt that starts as an earlier one did takes
/// that prefix's keys and values from the cache and runs only the rest, and generates
/// exactly what it generates without the cache: alone or in a batch mixing cached and new
/// prompts, greedy and sampled, in the text, vision and M-RoPE layouts (an image's tokens
/// are never cached). A model of another version starts with a cache of its own.
#[test]
fn prompts_reuse_an_earlier_requests_prefix_and_generate_as_without_it() {
    let data = data_dir();
    let dylib = inference::find_ort_dylib(&data).unwrap();
    let other = Prompt::text_only(
        "A prompt that shares no first block with the others, so its row is prefilled cold \
         beside rows that come from the cache.",
    );
    for dir in ["tiny-text", "tiny-vlm", "tiny-qwen2vl"] {
        let mut o = OnnxOptions::new(data.join("models").join(dir), dylib.clone());
        o.generation.max_new_tokens = 8;
        let backend = OnnxBackend::load(o).unwrap();
        let ps: Vec<Prompt> = [(1, 10, 4), (2, 10, 7), (3, 200, 9)]
            .map(|(seed, shade, labels)| backend.prompt_for(&input(seed, shade, labels)).unwrap())
            .into();
        let model = backend.model();
        let mut m = model.lock().unwrap();
        let images = !ps[0].images.is_empty();
        for temperature in [0.0, 1.0] {
            let params = GenParams {
                max_new_tokens: 8,
                temperature,
                top_p: 1.0,
                stop: vec![],
            };
            let what = |s: &str| format!("{dir} at temperature {temperature}: {s}");
            let mixed = [ps[1].clone(), other.clone(), ps[2].clone()];
            m.set_prefix_cache(0);
            let alone: Vec<inference::Generation> = ps
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    m.generate(std::slice::from_ref(p), &params, &[i as u64])
                        .unwrap()
                        .remove(0)
                })
                .collect();
            let batch = m.generate(&mixed, &params, &[11, 12, 13]).unwrap();

            m.set_prefix_cache(inference::DEFAULT_PREFIX_CACHE_BYTES);
            let first = m.generate(&ps[..1], &params, &[0]).unwrap();
            assert_same(&alone[0], &first[0], &what("the first prompt, cold"));
            let before = m.prefill_stats();
            let second = m.generate(&ps[1..2], &params, &[1]).unwrap();
            assert_same(&alone[1], &second[0], &what("the second prompt"));
            let after = m.prefill_stats();
            let stats = m.prefix_cache_stats().unwrap();
            assert_eq!(stats.lookups, 2);
            // Only whole blocks before a prompt's first image are kept: the screenshot
            // comes first in these prompts, so nothing of theirs is.
            let ids = m.encode(&ps[0].text).unwrap();
            let image_id = m.config().image_token_id;
            let head = ids
                .iter()
                .position(|t| Some(*t) == image_id)
                .unwrap_or(ids.len());
            assert_eq!(
                stats.bytes > 0,
                head >= inference::model::PREFIX_BLOCK,
                "{}",
                what(&format!("blocks kept of a {head}-token head"))
            );
            if !images {
                // The system text and the task: whole blocks taken, the rest run.
                assert!(
                    after.cached > before.cached,
                    "{}",
                    what("a prefix was taken")
                );
                assert_eq!(stats.hits, 1);
                let len = m.encode(&ps[1].text).unwrap().len() as u64;
                assert_eq!(
                    (after.tokens - before.tokens) + (after.cached - before.cached),
                    len
                );
            }
            // The text-only prompt cached too, so that the mixed batch has rows from the
            // cache beside cold ones in every layout (M-RoPE positions included).
            let cached_before = m.prefill_stats().cached;
            m.generate(std::slice::from_ref(&other), &params, &[9])
                .unwrap();
            let again = m.generate(&mixed, &params, &[11, 12, 13]).unwrap();
            assert!(
                m.prefill_stats().cached > cached_before,
                "{}",
                what("the mixed batch took a cached prefix")
            );
            for (row, (x, y)) in batch.iter().zip(&again).enumerate() {
                assert_same(x, y, &what(&format!("row {row} of a mixed batch")));
            }
        }
    }
    // Another version is another model, with its own (empty) cache.
    let mut o = OnnxOptions::new(data.join("models/tiny-text-flat"), dylib);
    o.generation.max_new_tokens = 8;
    let flat = OnnxBackend::load(o).unwrap();
    let p = flat.prompt_for(&input(1, 10, 4)).unwrap();
    let model = flat.model();
    let mut m = model.lock().unwrap();
    assert_eq!(m.prefix_cache_stats().unwrap().lookups, 0);
    let greedy = GenParams {
        max_new_tokens: 8,
        temperature: 0.0,
        top_p: 1.0,
        stop: vec![],
    };
    let cached = m.generate(std::slice::from_ref(&p), &greedy, &[0]).unwrap();
    let cached_again = m.generate(std::slice::from_ref(&p), &greedy, &[0]).unwrap();
    m.set_prefix_cache(0);
    let plain = m.generate(&[p], &greedy, &[0]).unwrap();
    assert_same(&plain[0], &cached[0], "another version, cold");
    assert_same(
        &plain[0],
        &cached_again[0],
        "another version, from its cache",
    );
}
