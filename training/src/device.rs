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

/// Why a [`TrainDevice`] cannot be read or used. The message names no field: a config says
/// `devices.train: ...`, the command line `--train-device: ...`, and a [`TrainError`]
/// made from it `device: ...`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DeviceError(String);

impl From<DeviceError> for TrainError {
    fn from(e: DeviceError) -> Self {
        TrainError::Input(format!("device: {}", e.0))
    }
}

/// Where the trainer computes: `cpu`, `cuda` (the first GPU) or `cuda:N`, as configs and
/// options spell it. Parsing checks the spelling only; whether this build and machine can
/// compute there is [`TrainDevice::check`]'s and [`TrainDevice::open`]'s.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TrainDevice {
    /// The CPU.
    #[default]
    Cpu,
    /// The GPU of this CUDA ordinal.
    Cuda(usize),
}

impl TrainDevice {
    /// Whether this build can compute here, without touching a GPU: what a config's
    /// validation can ask on any machine.
    pub fn check(self) -> Result<(), DeviceError> {
        match self {
            Self::Cpu => Ok(()),
            Self::Cuda(_) if cfg!(feature = "cuda") => Ok(()),
            Self::Cuda(_) => Err(DeviceError(format!(
                "{self} needs a build with the trainer's CUDA backend \
                 (cargo build --release --features train-cuda, with nvcc on the PATH)"
            ))),
        }
    }

    /// The device, opened (a GPU that is not there is an error).
    pub fn open(self) -> Result<Device, DeviceError> {
        self.check()?;
        match self {
            Self::Cpu => Ok(Device::Cpu),
            Self::Cuda(ordinal) => {
                Device::new_cuda(ordinal).map_err(|e| DeviceError(format!("{self}: {e}")))
            }
        }
    }

    /// Whether it is the CPU.
    pub fn is_cpu(self) -> bool {
        self == Self::Cpu
    }
}

impl std::str::FromStr for TrainDevice {
    type Err = DeviceError;

    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        match spec {
            "cpu" => Ok(Self::Cpu),
            "cuda" => Ok(Self::Cuda(0)),
            s => match s.strip_prefix("cuda:").map(str::parse::<usize>) {
                Some(Ok(n)) => Ok(Self::Cuda(n)),
                _ => Err(DeviceError(format!(
                    "unknown {spec:?} (expected cpu, cuda or cuda:N)"
                ))),
            },
        }
    }
}

impl std::fmt::Display for TrainDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Cpu => f.write_str("cpu"),
            Self::Cuda(n) => write!(f, "cuda:{n}"),
        }
    }
}

// As its spelling, so stored configs read as they were written.
impl Serialize for TrainDevice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for TrainDevice {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// The device named by `cpu`, `cuda` or `cuda:N`, opened.
pub fn parse_device(spec: &str) -> Result<Device, TrainError> {
    Ok(spec.parse::<TrainDevice>()?.open()?)
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

    #[test]
    fn a_train_device_reads_and_writes_as_it_is_spelled() {
        assert_eq!("cpu".parse::<TrainDevice>().unwrap(), TrainDevice::Cpu);
        assert_eq!("cuda".parse::<TrainDevice>().unwrap(), TrainDevice::Cuda(0));
        assert_eq!(
            "cuda:3".parse::<TrainDevice>().unwrap(),
            TrainDevice::Cuda(3)
        );
        for bad in ["gpu", "cuda:", "cuda:x", "cuda:-1", "CPU", ""] {
            assert!(bad.parse::<TrainDevice>().is_err(), "{bad:?}");
        }
        let d: TrainDevice = serde_json::from_str("\"cuda:2\"").unwrap();
        assert_eq!(serde_json::to_string(&d).unwrap(), "\"cuda:2\"");
        let e = serde_json::from_str::<TrainDevice>("\"tpu\"")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("unknown \"tpu\" (expected cpu, cuda or cuda:N)"),
            "{e}"
        );
        assert!(TrainDevice::Cpu.check().is_ok());
        assert_eq!(TrainDevice::Cuda(1).check().is_ok(), cfg!(feature = "cuda"));
    }
}
