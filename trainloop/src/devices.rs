//! Where a run computes: the policies' ONNX Runtime (rollouts, evaluations and the replay
//! that turns episodes into training samples) and the built-in trainer. Absent from a
//! config, everything runs on the CPU as it always did; a GPU machine names `cuda` here.

use serde::{Deserialize, Serialize};
use training::{Precision, TrainDevice};

/// See the module documentation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Devices {
    /// The policies' execution provider.
    #[serde(default)]
    pub policy: PolicyDevice,
    /// ONNX Runtime's intra-op threads per policy session (a run holds two: sampling and
    /// greedy). More cores than two want more: one decision's prefill is one session's.
    #[serde(default = "two")]
    pub policy_threads: u32,
    /// The built-in trainer: `cpu`, `cuda` or `cuda:N`.
    #[serde(default)]
    pub train: TrainDevice,
    /// The trainer's precision: `auto` (bf16 on a GPU, f32 on the CPU), `f32` or `bf16`.
    #[serde(default)]
    pub precision: Precision,
}

/// Where the policies run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyDevice {
    /// ONNX Runtime's CPU execution provider.
    #[default]
    Cpu,
    /// ONNX Runtime's CUDA execution provider (a build with the `cuda` feature and the
    /// onnxruntime-gpu library).
    Cuda,
}

/// Most intra-op threads a session may ask for.
pub const MAX_POLICY_THREADS: u32 = 256;

impl Default for Devices {
    fn default() -> Self {
        Self {
            policy: PolicyDevice::Cpu,
            policy_threads: two(),
            train: TrainDevice::Cpu,
            precision: Precision::Auto,
        }
    }
}

impl Devices {
    /// Whether this is the all-CPU default (left out of a stored config, so configs
    /// written before devices existed read back unchanged).
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// Checks what needs no GPU: names, ranges, and that this build can compute where
    /// asked. Opening the trainer's GPU is [`Devices::open_train`]'s.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=MAX_POLICY_THREADS).contains(&self.policy_threads) {
            return Err(format!(
                "devices.policy_threads: must be between 1 and {MAX_POLICY_THREADS}"
            ));
        }
        if self.policy == PolicyDevice::Cuda && !inference::model::CUDA_BUILT {
            return Err("devices.policy: cuda needs a build with ONNX Runtime's CUDA provider (cargo build --release --features cuda) and the onnxruntime-gpu library".into());
        }
        self.train
            .check()
            .map_err(|e| format!("devices.train: {e}"))
    }

    /// The trainer's device, opened (a GPU that is not there is an error naming the field).
    pub fn open_train(&self) -> Result<candle_core::Device, String> {
        self.train.open().map_err(|e| format!("devices.train: {e}"))
    }

    /// The policies' ONNX Runtime device.
    pub fn policy_device(&self) -> inference::Device {
        match self.policy {
            PolicyDevice::Cpu => inference::Device::Cpu,
            PolicyDevice::Cuda => inference::Device::Cuda,
        }
    }

    /// Whether the trainer runs anywhere but the CPU.
    pub fn trains_off_cpu(&self) -> bool {
        !self.train.is_cpu()
    }
}

fn two() -> u32 {
    2
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: serde_json::Value) -> Result<Devices, String> {
        let d: Devices = serde_json::from_value(v).map_err(|e| e.to_string())?;
        d.validate().map(|()| d)
    }

    #[test]
    fn defaults_are_the_cpu_and_bad_settings_name_the_field() {
        let d = parse(serde_json::json!({})).unwrap();
        assert!(d.is_default());
        assert_eq!(d.policy_device(), inference::Device::Cpu);
        assert!(d.open_train().unwrap().is_cpu());
        let d = parse(serde_json::json!({"policy_threads": 8, "precision": "f32"})).unwrap();
        assert!(!d.is_default());
        assert_eq!(d.precision, Precision::F32);

        let e = parse(serde_json::json!({"policy_threads": 0})).unwrap_err();
        assert!(
            e.starts_with("devices.policy_threads: must be between 1"),
            "{e}"
        );
        // Misspelt, it does not deserialise (`RunConfig::parse` names the path).
        let e = parse(serde_json::json!({"train": "gpu"})).unwrap_err();
        assert!(e.starts_with("unknown \"gpu\""), "{e}");
        assert!(e.contains("cpu, cuda or cuda:N"), "{e}");
        let e = parse(serde_json::json!({"precision": "fp16"})).unwrap_err();
        assert!(e.contains("unknown variant `fp16`"), "{e}");
        let e = parse(serde_json::json!({"policy": "tpu"})).unwrap_err();
        assert!(e.contains("unknown variant `tpu`"), "{e}");
        let e = parse(serde_json::json!({"gpus": 2})).unwrap_err();
        assert!(e.contains("unknown field `gpus`"), "{e}");
    }

    #[test]
    fn cuda_in_a_build_without_it_is_refused_before_anything_runs() {
        // CI builds neither CUDA feature: both fields must say what to rebuild with.
        if !inference::model::CUDA_BUILT {
            let e = parse(serde_json::json!({"policy": "cuda"})).unwrap_err();
            assert!(e.starts_with("devices.policy: cuda needs a build"), "{e}");
            assert!(e.contains("--features cuda"), "{e}");
        }
        let d = parse(serde_json::json!({"train": "cuda:1"}));
        if TrainDevice::Cuda(1).check().is_err() {
            let e = d.unwrap_err();
            assert!(e.starts_with("devices.train: cuda:1 needs a build"), "{e}");
            assert!(e.contains("--features train-cuda"), "{e}");
        } else {
            assert_eq!(d.unwrap().train, TrainDevice::Cuda(1));
        }
    }
}
