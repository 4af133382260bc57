//! Samples that share a prompt are computed as one prompt pass plus their completions, and
//! that changes nothing but the cost: log-probabilities, the FBC and GRPO losses and every
//! parameter's gradient equal the per-sample computation's to 1e-4, on a Llama decoder
//! and on M-RoPE (tiny-qwen2vl), with groups of several sizes, prompts and responses of
//! several lengths, interleaved in the batch; and an update with shared prompts moves the
//! weights as the per-sample update does.

use candle_core::{Device, Tensor};
use training::decoder::Decoder;
use training::objective::{GrpoConfig, TokenLogprobs, fbc_loss, grpo_loss, token_logprobs_with};
use training::shared_prompts::{PromptSharing, prompt_groups};
use training::{Objective, Sample, TrainConfig, Trainer};

use crate::common;

/// A prompt of `len` random embeddings with positions 0.. (distinct per M-RoPE axis).
struct Prompt {
    embeds: Vec<f32>,
    len: usize,
}

fn prompt(rnd: &mut impl FnMut() -> u64, hidden: usize, len: usize) -> Prompt {
    Prompt {
        embeds: (0..len * hidden)
            .map(|_| (rnd() % 2000) as f32 / 1000.0 - 1.0)
            .collect(),
        len,
    }
}

fn sample(
    rnd: &mut impl FnMut() -> u64,
    p: &Prompt,
    (hidden, vocab): (usize, usize),
    response: usize,
    advantage: f32,
) -> Sample {
    let mut embeds = p.embeds.clone();
    embeds.extend((0..response * hidden).map(|_| (rnd() % 2000) as f32 / 1000.0 - 1.0));
    let len = p.len + response;
    Sample {
        embeds,
        positions: (0..len as i64).map(|t| [t, t / 2, t / 3]).collect(),
        prompt_len: p.len,
        response: (0..response)
            .map(|_| (rnd() % vocab as u64) as u32)
            .collect(),
        behaviour_logprobs: Vec::new(),
        allowed: None,
        advantage,
    }
}

/// Six samples of three prompts (3 + 2 + 1), interleaved: A B A C B A.
fn batch(dec: &Decoder) -> Vec<Sample> {
    let (hidden, vocab) = (dec.config().hidden, dec.vocab());
    let mut rnd = common::lcg(11);
    let a = prompt(&mut rnd, hidden, 9);
    let b = prompt(&mut rnd, hidden, 6);
    let c = prompt(&mut rnd, hidden, 7);
    let shape = (hidden, vocab);
    vec![
        sample(&mut rnd, &a, shape, 3, 1.0),
        sample(&mut rnd, &b, shape, 4, -0.5),
        sample(&mut rnd, &a, shape, 5, -1.0),
        sample(&mut rnd, &c, shape, 2, 0.7),
        sample(&mut rnd, &b, shape, 1, 0.5),
        sample(&mut rnd, &a, shape, 2, 0.3),
    ]
}

fn flat(t: &Tensor) -> Vec<f32> {
    t.flatten_all().unwrap().to_vec1::<f32>().unwrap()
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).fold(0f32, |m, (x, y)| m.max((x - y).abs()))
}

/// The loss of `lp` under `objective` (GRPO against proximal values a little off, so the
/// ratio is not 1 and clipping engages on some tokens).
fn loss(lp: &TokenLogprobs, batch: &[&Sample], objective: Objective) -> Tensor {
    match objective {
        Objective::Fbc => fbc_loss(lp).unwrap(),
        Objective::Grpo => {
            let proximal: Vec<f32> = flat(&lp.values.detach())
                .iter()
                .enumerate()
                .map(|(i, v)| v + [0.3, -0.3, 0.05][i % 3])
                .collect();
            grpo_loss(lp, &proximal, batch, &GrpoConfig::default())
                .unwrap()
                .0
        }
    }
}

fn shared_equals_per_sample(model: &str, mrope: bool) {
    let dec = Decoder::load(&common::model(model), &Device::Cpu).unwrap();
    assert_eq!(dec.mrope(), mrope);
    let samples = batch(&dec);
    let refs: Vec<&Sample> = samples.iter().collect();
    assert_eq!(
        prompt_groups(refs.iter().copied()),
        [vec![0, 2, 5], vec![1, 4], vec![3]]
    );
    for objective in [Objective::Fbc, Objective::Grpo] {
        let run = |sharing| {
            let lp = token_logprobs_with(&dec, &refs, 1.0, sharing).unwrap();
            let l = loss(&lp, &refs, objective);
            let grads = l.backward().unwrap();
            let per_param: Vec<(String, Vec<f32>)> = dec
                .params()
                .iter()
                .map(|(name, var)| (name.clone(), flat(grads.get(var).unwrap())))
                .collect();
            (lp, l.to_scalar::<f32>().unwrap(), per_param)
        };
        let (lp_s, loss_s, grads_s) = run(PromptSharing::Shared);
        let (lp_p, loss_p, grads_p) = run(PromptSharing::PerSample);
        assert_eq!(
            lp_s.prompt_passes, 3,
            "{model}: one pass per distinct prompt"
        );
        assert_eq!(lp_p.prompt_passes, 6);
        assert_eq!(lp_s.offsets, lp_p.offsets);
        let d = max_diff(&flat(&lp_s.values), &flat(&lp_p.values));
        assert!(
            d <= 1e-4,
            "{model} {objective}: log-probabilities differ by {d}"
        );
        let d = max_diff(&flat(&lp_s.entropy), &flat(&lp_p.entropy));
        assert!(d <= 1e-4, "{model} {objective}: entropies differ by {d}");
        assert!(
            (loss_s - loss_p).abs() <= 1e-4,
            "{model} {objective}: loss {loss_s} vs {loss_p}"
        );
        let mut largest = 0f32;
        for ((name, gs), (_, gp)) in grads_s.iter().zip(&grads_p) {
            let d = max_diff(gs, gp);
            assert!(
                d <= 1e-4,
                "{model} {objective}: `{name}`'s gradient differs by {d}"
            );
            largest = largest.max(gp.iter().fold(0f32, |m, x| m.max(x.abs())));
        }
        // Not vacuous: the gradients are far from zero.
        assert!(
            largest > 1e-3,
            "{model} {objective}: gradients ~0 ({largest})"
        );
    }
}

#[test]
fn shared_prompts_give_the_per_sample_values_and_gradients_on_llama() {
    shared_equals_per_sample("tiny-text", false);
}

#[test]
fn shared_prompts_give_the_per_sample_values_and_gradients_with_mrope() {
    shared_equals_per_sample("tiny-qwen2vl", true);
}

#[test]
fn an_update_with_shared_prompts_moves_the_weights_as_the_per_sample_one() {
    let base = common::model("tiny-text");
    let dec = Decoder::load(&base, &Device::Cpu).unwrap();
    let samples = batch(&dec);
    for objective in [Objective::Fbc, Objective::Grpo] {
        let after = |share_prompts| {
            // One step over the whole batch: the same samples in every optimiser step
            // whatever the order, so only the computation differs.
            let cfg = TrainConfig {
                objective,
                micro_batch: 6,
                share_prompts,
                ..TrainConfig::default()
            };
            let mut t = Trainer::load(&base, cfg, &Device::Cpu).unwrap();
            let report = t.update(&samples, &mut |_, _, _| {}).unwrap();
            assert_eq!(report.steps, 1);
            (common::weights(&t), report.first_loss)
        };
        let (shared, loss_s) = after(true);
        let (per_sample, loss_p) = after(false);
        assert!(
            (loss_s - loss_p).abs() <= 1e-4,
            "{objective}: {loss_s} vs {loss_p}"
        );
        let before =
            common::weights(&Trainer::load(&base, TrainConfig::default(), &Device::Cpu).unwrap());
        let mut moved = 0f32;
        for (((name, s), (_, p)), (_, b)) in shared.iter().zip(&per_sample).zip(&before) {
            let d = max_diff(s, p);
            assert!(
                d <= 1e-5,
                "{objective}: `{name}` differs by {d} after the update"
            );
            moved = moved.max(max_diff(p, b));
        }
        assert!(
            moved > 1e-4,
            "{objective}: the update moved nothing ({moved})"
        );
    }
}
