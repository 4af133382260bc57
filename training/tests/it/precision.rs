//! Mixed precision and devices: the trainer under test against the CPU in f32. On the CPU
//! these run bf16 (slow there, but the same code path a GPU takes); with
//! `SURFGYM_TRAIN_DEVICE=cuda` and a `--features cuda` build they check the GPU.

use candle_core::Device;
use training::Precision;
use training::agreement::agreement;
use training::bench::BenchShape;

use crate::common;

fn device() -> Device {
    match std::env::var("SURFGYM_TRAIN_DEVICE") {
        Ok(spec) => training::parse_device(&spec).unwrap(),
        Err(_) => Device::Cpu,
    }
}

const SHAPE: BenchShape = BenchShape {
    batch: 4,
    prompt: 48,
    response: 8,
    steps: 1,
    micro_batch: None,
    top_layers: None,
    group: 1,
    share_prompts: false,
    lora: None,
    warm_up: 1,
};

/// f32 agrees with the reference to rounding (exactly, on the same CPU).
#[test]
fn f32_trains_what_the_reference_trains() {
    let dev = device();
    let a = agreement(&common::model("tiny-text"), SHAPE, &dev, Precision::F32).unwrap();
    assert_eq!(a.precision, "f32");
    assert_eq!(a.tokens, 32);
    if dev.is_cpu() {
        assert_eq!(a.logprob_max_diff, 0.0, "{a:?}");
        assert_eq!(a.after_update_max_diff, 0.0, "{a:?}");
    }
    assert!(a.logprob_max_diff < 1e-3, "{a:?}");
    assert!((a.loss - a.loss_reference).abs() < 1e-3, "{a:?}");
    assert!(a.after_update_max_diff < 1e-3, "{a:?}");
}

/// bf16 really computes in bf16 (the log-probabilities differ from f32's, which they
/// would not if the casts were skipped), stays within bf16's rounding of the reference,
/// and its update moves the log-probabilities the way f32's does.
#[test]
fn bf16_is_close_to_f32_and_learns_the_same_way() {
    let dev = device();
    for model in ["tiny-text", "tiny-qwen2vl"] {
        let a = agreement(&common::model(model), SHAPE, &dev, Precision::Bf16).unwrap();
        assert_eq!(a.precision, "bf16");
        assert!(
            a.logprob_max_diff > 0.0,
            "{model}: bf16 gave f32's numbers: {a:?}"
        );
        // bf16 keeps 8 bits of mantissa: about 0.4% per rounding. The loss is the mean
        // -log p, so it sets the scale.
        let scale = a.loss_reference.abs();
        assert!(a.logprob_mean_diff < 0.015 * scale, "{model}: {a:?}");
        assert!(a.logprob_max_diff < 0.05 * scale, "{model}: {a:?}");
        assert!(
            (a.loss - a.loss_reference).abs() < 0.01 * scale,
            "{model}: {a:?}"
        );
        // One step at lr 1e-3 raises the likelihood of what it clones, on both sides.
        assert!(a.update_gain_reference > 0.0, "{model}: {a:?}");
        assert!(
            a.update_gain > 0.5 * a.update_gain_reference,
            "{model}: {a:?}"
        );
        assert!(
            a.update_gain < 1.5 * a.update_gain_reference,
            "{model}: {a:?}"
        );
    }
}

/// Auto is f32 on the CPU; a device the build lacks is refused with what to do.
#[test]
fn auto_precision_and_unbuilt_devices() {
    let a = agreement(
        &common::model("tiny-text"),
        SHAPE,
        &Device::Cpu,
        Precision::Auto,
    )
    .unwrap();
    assert_eq!(a.precision, "f32");
    if !cfg!(feature = "cuda") {
        let err = training::parse_device("cuda").unwrap_err().to_string();
        assert!(err.contains("--features train-cuda"), "{err}");
    }
}
