//! What an update may move and how far: a KL penalty holds the policy near a frozen
//! reference, an entropy bonus keeps its distributions wide, the guard undoes an update
//! that moved the policy past a bound (retrying at half the rate, and saying so), and
//! training the top layers moves them as full training would and nothing below.

use candle_core::Device;
use inference::Model;
use training::{Guard, Regularization, Sample, TrainConfig, Trainer, UpdateReport};

use crate::common;

const PROMPT: &str = common::CLICK_RED;

/// Behaviour-cloning samples of a few actions under one prompt, built by the policy's
/// own model.
fn samples() -> Vec<Sample> {
    let dir = common::model("tiny-text");
    let mut m = Model::load(&dir, &common::ort_dylib(), inference::Device::Cpu, 1).unwrap();
    common::bc_samples(
        &mut m,
        PROMPT,
        &["click(3)", "click(12)", "answer(\"red\")"],
    )
}

/// A fast behaviour-cloning config: the moves are big enough to measure in one update.
fn cfg(lr: f64) -> TrainConfig {
    let mut c = TrainConfig {
        micro_batch: 3,
        epochs: 4,
        ..TrainConfig::default()
    };
    c.optimizer.lr = lr;
    c
}

/// One update of tiny-text with `c`, measured against the base model as reference.
fn update(c: TrainConfig, samples: &[Sample]) -> (UpdateReport, Trainer) {
    let base = common::model("tiny-text");
    let mut t = Trainer::load(&base, c, &Device::Cpu).unwrap();
    t.set_reference(&base).unwrap();
    let r = t.update(samples, &mut |_, _, _| {}).unwrap();
    (r, t)
}

/// A guard with no bound: it measures every update and never refuses one.
fn watching() -> Option<Guard> {
    Some(Guard::default())
}

#[test]
fn a_kl_penalty_holds_the_policy_near_its_reference() {
    let s = samples();
    let free = update(
        TrainConfig {
            guard: watching(),
            ..cfg(2e-3)
        },
        &s,
    )
    .0;
    let held = update(
        TrainConfig {
            guard: watching(),
            regularization: Regularization {
                kl: 1.0,
                entropy: 0.0,
            },
            ..cfg(2e-3)
        },
        &s,
    )
    .0;
    let kl = |r: &UpdateReport| r.health.unwrap().kl_ref.unwrap();
    assert!(kl(&free) > 0.0, "{:?}", free.health);
    assert!(
        kl(&held) < kl(&free) * 0.8,
        "KL with the penalty {} is not below KL without it {}",
        kl(&held),
        kl(&free)
    );
}

#[test]
fn an_entropy_bonus_keeps_the_distributions_wider() {
    let s = samples();
    let plain = update(
        TrainConfig {
            guard: watching(),
            ..cfg(1e-2)
        },
        &s,
    )
    .0;
    let wide = update(
        TrainConfig {
            guard: watching(),
            regularization: Regularization {
                kl: 0.0,
                entropy: 1.0,
            },
            ..cfg(1e-2)
        },
        &s,
    )
    .0;
    let h = |r: &UpdateReport| r.health.unwrap().entropy;
    assert!(
        h(&wide) > h(&plain),
        "entropy with the bonus {} is not above without it {}",
        h(&wide),
        h(&plain)
    );
}

#[test]
fn the_guard_undoes_an_update_past_its_bound_and_retries_at_half_the_rate() {
    let s = samples();
    let base = common::model("tiny-text");
    let strict = TrainConfig {
        guard: Some(Guard {
            max_mean_ratio: Some(1.0001),
            retries: 2,
            ..Guard::default()
        }),
        ..cfg(5e-2)
    };
    let mut t = Trainer::load(&base, strict, &Device::Cpu).unwrap();
    let before = t.logprobs(&s).unwrap();
    let r = t.update(&s, &mut |_, _, _| {}).unwrap();
    let g = r.guard.clone().unwrap();
    let scales: Vec<f64> = g.attempts.iter().map(|a| a.lr_scale).collect();
    assert_eq!(scales, [1.0, 0.5, 0.25], "{g:?}");
    assert!(!g.accepted);
    assert!(g.attempts.iter().all(|a| {
        a.crossed
            .as_deref()
            .is_some_and(|c| c.contains("mean ratio"))
    }));
    // Refused: the weights are the parent's, bit for bit.
    assert_eq!(t.logprobs(&s).unwrap(), before);
    // The report's steps are the last try's: at a quarter of the configured rate.
    assert!(
        (r.optimizer[0].lr - 5e-2 * 0.25).abs() < 1e-12,
        "{:?}",
        r.optimizer[0]
    );

    // A bound the update stays within: accepted on the first try, and the weights moved.
    let loose = TrainConfig {
        guard: Some(Guard {
            max_clipped: Some(1.0),
            ..Guard::default()
        }),
        ..cfg(5e-2)
    };
    let mut t = Trainer::load(&base, loose, &Device::Cpu).unwrap();
    let r = t.update(&s, &mut |_, _, _| {}).unwrap();
    let g = r.guard.unwrap();
    assert!(g.accepted && g.attempts.len() == 1, "{g:?}");
    assert_ne!(t.logprobs(&s).unwrap(), before);
}

#[test]
fn a_kl_term_without_a_reference_is_refused_naming_it() {
    let s = samples();
    let c = TrainConfig {
        regularization: Regularization {
            kl: 0.1,
            entropy: 0.0,
        },
        ..cfg(1e-3)
    };
    let mut t = Trainer::load(&common::model("tiny-text"), c, &Device::Cpu).unwrap();
    let e = t.update(&s, &mut |_, _, _| {}).unwrap_err().to_string();
    assert!(e.contains("regularization.kl"), "{e}");
    let bad = TrainConfig {
        regularization: Regularization {
            kl: -1.0,
            entropy: 0.0,
        },
        ..cfg(1e-3)
    };
    let e = Trainer::load(&common::model("tiny-text"), bad, &Device::Cpu)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("regularization.kl"), "{e}");
}

#[test]
fn training_the_top_layers_moves_them_as_full_training_does_and_leaves_the_rest() {
    let s = samples();
    let base = common::model("tiny-text");
    let one_step = |top_layers| {
        let mut c = TrainConfig {
            micro_batch: 3,
            epochs: 1,
            top_layers,
            ..TrainConfig::default()
        };
        // Global-norm clipping would couple every parameter's step to the others'.
        c.optimizer.clip_norm = None;
        let mut t = Trainer::load(&base, c, &Device::Cpu).unwrap();
        let r = t.update(&s, &mut |_, _, _| {}).unwrap();
        (r, common::weights(&t))
    };
    let before =
        common::weights(&Trainer::load(&base, TrainConfig::default(), &Device::Cpu).unwrap());
    let (full, all) = one_step(None);
    let (top, some) = one_step(Some(1));
    // The same forward pass: the same loss.
    assert_eq!(full.first_loss, top.first_loss);
    for (((name, b), (_, f)), (_, t)) in before.iter().zip(&all).zip(&some) {
        if name.starts_with("model.layers.0.") {
            assert_eq!(t, b, "{name} moved though it is below the trained layers");
            assert_ne!(f, b, "{name} did not move in full training");
        } else {
            let diff = t.iter().zip(f).fold(0f32, |m, (x, y)| m.max((x - y).abs()));
            assert!(diff < 1e-6, "{name}: {diff} from full training's step");
            assert_ne!(t, b, "{name} did not move");
        }
    }
    let e = Trainer::load(
        &base,
        TrainConfig {
            top_layers: Some(3),
            ..TrainConfig::default()
        },
        &Device::Cpu,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("top_layers"), "{e}");
}
