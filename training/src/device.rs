//! Where the trainer computes, and in which precision.
//!
//! The parameters, their gradients and AdamW's moments always stay f32 (the master
//! weights): the updates of a small learning rate are below bf16's resolution and would be
//! lost. `bf16` is mixed precision: each forward pass casts the weights to bf16 for the
//! matrix products, while RMSNorm, attention's softmax and the log-probabilities run in
//! f32, where bf16's 8-bit mantissa would move the ratios GRPO clips.

use candle_core::{DType, Device};
use serde::{Deserialize, Serialize};

use crate::TrainError;

/// The precision of the forward and backward passes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    /// bf16 on a GPU, f32 on the CPU (candle's CPU bf16 products are slower than f32).
    #[default]
    Auto,
    /// Everything in f32.
    F32,
    /// Matrix products in bf16 over f32 master weights.
    Bf16,
}

impl Precision {
    /// The dtype of the matrix products on `device`.
    pub fn compute_dtype(self, device: &Device) -> DType {
        match self {
            Self::F32 => DType::F32,
            Self::Bf16 => DType::BF16,
            Self::Auto if device.is_cpu() => DType::F32,
            Self::Auto => DType::BF16,
        }
    }
}

impl std::str::FromStr for Precision {
    type Err = TrainError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(Self::Auto),
            "f32" | "fp32" => Ok(Self::F32),
            "bf16" => Ok(Self::Bf16),
            other => Err(TrainError::Input(format!(
                "precision: unknown {other:?} (expected auto, f32 or bf16)"
            ))),
        }
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Auto => "auto",
            Self::F32 => "f32",
            Self::Bf16 => "bf16",
        })
    }
}

/// The name reports use for a compute dtype (`f32`, `bf16`).
pub fn dtype_name(dtype: DType) -> &'static str {
    match dtype {
        DType::BF16 => "bf16",
        _ => "f32",
    }
}

/// Checks a device name (`cpu`, `cuda` or `cuda:N`) and that this build can compute
/// there, without touching a GPU: what a config's validation can ask on any machine.
/// Returns the CUDA ordinal (`None` for the CPU).
pub fn check_device_spec(spec: &str) -> Result<Option<usize>, TrainError> {
    let ordinal = match spec {
        "cpu" => return Ok(None),
        "cuda" => 0,
        s => match s.strip_prefix("cuda:").map(str::parse::<usize>) {
            Some(Ok(n)) => n,
            _ => {
                return Err(TrainError::Input(format!(
                    "device: unknown {spec:?} (expected cpu, cuda or cuda:N)"
                )));
            }
        },
    };
    if !cfg!(feature = "cuda") {
        return Err(TrainError::Input(format!(
            "device: {spec} needs a build with the trainer's CUDA backend \
             (cargo build --release --features train-cuda, with nvcc on the PATH)"
        )));
    }
    Ok(Some(ordinal))
}

/// The device named by `cpu`, `cuda` or `cuda:N` (opening the GPU).
pub fn parse_device(spec: &str) -> Result<Device, TrainError> {
    match check_device_spec(spec)? {
        None => Ok(Device::Cpu),
        Some(ordinal) => {
            Device::new_cuda(ordinal).map_err(|e| TrainError::Input(format!("device: {spec}: {e}")))
        }
    }
}

/// A short name of `device` for reports (`cpu`, `cuda:0`).
pub fn device_name(device: &Device) -> String {
    match device.location() {
        candle_core::DeviceLocation::Cpu => "cpu".to_string(),
        candle_core::DeviceLocation::Cuda { gpu_id } => format!("cuda:{gpu_id}"),
        candle_core::DeviceLocation::Metal { gpu_id } => format!("metal:{gpu_id}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_is_f32_on_the_cpu_and_names_are_checked() {
        assert_eq!(Precision::Auto.compute_dtype(&Device::Cpu), DType::F32);
        assert_eq!(Precision::Bf16.compute_dtype(&Device::Cpu), DType::BF16);
        assert_eq!("fp32".parse::<Precision>().unwrap(), Precision::F32);
        let err = "fp16".parse::<Precision>().unwrap_err().to_string();
        assert!(err.contains("precision") && err.contains("fp16"), "{err}");
        assert!(parse_device("cpu").unwrap().is_cpu());
        let err = parse_device("gpu").unwrap_err().to_string();
        assert!(err.contains("device") && err.contains("cuda:N"), "{err}");
        if !cfg!(feature = "cuda") {
            let err = parse_device("cuda:0").unwrap_err().to_string();
            assert!(err.contains("train-cuda"), "{err}");
        }
        assert_eq!(device_name(&Device::Cpu), "cpu");
    }
}
