//! LoRA adapters (Hu et al. 2021, as PEFT runs them): a rank-r update `(alpha / r) · A·B`
//! beside each target projection, the base weights frozen. Only `A` and `B` learn, so an
//! update's gradients, optimiser moments and version are a few megabytes however big the
//! model. `B` starts at zero, so a fresh adapter changes nothing.
//!
//! Layout: ONNX's `*.weight_t` is `[in, out]`, so `A` is `[in, r]` and `B` `[r, out]`, and
//! the merged weight is `W_t + s · A·B`. A version stores both: the merged tensors, which
//! ONNX Runtime puts over the base (`weights.safetensors`), and the adapter, which the
//! trainer goes on from and `inference::peft` exports in PEFT's layout.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use candle_core::{DType, Device, Tensor, Var};
use inference::version::AdapterMeta;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::TrainError;

/// A projection an adapter may sit on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Projection {
    /// Attention's query.
    QProj,
    /// Attention's key.
    KProj,
    /// Attention's value.
    VProj,
    /// Attention's output.
    OProj,
    /// The MLP's gate.
    GateProj,
    /// The MLP's up projection.
    UpProj,
    /// The MLP's down projection.
    DownProj,
}

impl Projection {
    /// Every projection of a layer.
    pub const ALL: [Projection; 7] = [
        Projection::QProj,
        Projection::KProj,
        Projection::VProj,
        Projection::OProj,
        Projection::GateProj,
        Projection::UpProj,
        Projection::DownProj,
    ];

    /// The matrix's name in layer `i`'s ONNX initializers.
    pub fn initializer(self, layer: usize) -> String {
        let (block, module) = self.parts();
        format!("model.layers.{layer}.{block}.{module}.weight_t")
    }

    /// (`self_attn` or `mlp`, the module's name as PEFT's `target_modules` list it).
    pub fn parts(self) -> (&'static str, &'static str) {
        match self {
            Projection::QProj => ("self_attn", "q_proj"),
            Projection::KProj => ("self_attn", "k_proj"),
            Projection::VProj => ("self_attn", "v_proj"),
            Projection::OProj => ("self_attn", "o_proj"),
            Projection::GateProj => ("mlp", "gate_proj"),
            Projection::UpProj => ("mlp", "up_proj"),
            Projection::DownProj => ("mlp", "down_proj"),
        }
    }
}

/// An adapter's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoraConfig {
    /// The rank r (1-256).
    pub rank: usize,
    /// The scale's numerator: updates are `(alpha / rank) · A·B` (default 2·rank).
    #[serde(default)]
    pub alpha: Option<f32>,
    /// The projections adapted (default: all seven of every layer).
    #[serde(default = "all_projections")]
    pub targets: Vec<Projection>,
}

fn all_projections() -> Vec<Projection> {
    Projection::ALL.to_vec()
}

impl LoraConfig {
    /// An adapter of rank `rank` on every projection, alpha 2·rank.
    pub fn rank(rank: usize) -> LoraConfig {
        LoraConfig {
            rank,
            alpha: None,
            targets: all_projections(),
        }
    }

    /// The scale's numerator.
    pub fn alpha(&self) -> f32 {
        self.alpha.unwrap_or(2.0 * self.rank as f32)
    }

    /// Checks every setting, naming the bad one.
    pub fn validate(&self) -> Result<(), TrainError> {
        let bad = |f: &str, why: &str| Err(TrainError::Input(format!("lora.{f}: {why}")));
        if !(1..=256).contains(&self.rank) {
            return bad("rank", "must be between 1 and 256");
        }
        if !(self.alpha() > 0.0 && self.alpha().is_finite()) {
            return bad("alpha", "must be a positive number");
        }
        if self.targets.is_empty() {
            return bad("targets", "must name at least one projection");
        }
        Ok(())
    }
}

/// An adapter's trainable tensors, by the matrix they adapt.
pub struct Adapter {
    meta: AdapterMeta,
    pairs: BTreeMap<String, (Var, Var)>,
}

impl Adapter {
    /// A fresh adapter for matrices of the given `[in, out]` shapes: `A` uniform in
    /// ±1/√in (PEFT's Kaiming init), `B` zero, drawn from `seed`.
    pub fn new(
        cfg: &LoraConfig,
        shapes: &BTreeMap<String, (usize, usize)>,
        seed: u64,
        device: &Device,
    ) -> Result<Adapter, TrainError> {
        cfg.validate()?;
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut pairs = BTreeMap::new();
        for (name, &(inner, out)) in shapes {
            let bound = 1.0 / (inner as f32).sqrt();
            let a: Vec<f32> = (0..inner * cfg.rank)
                .map(|_| rng.random_range(-bound..bound))
                .collect();
            let a = Var::from_tensor(&Tensor::from_vec(a, (inner, cfg.rank), device)?)?;
            let b = Var::zeros((cfg.rank, out), DType::F32, device)?;
            pairs.insert(name.clone(), (a, b));
        }
        Ok(Adapter {
            meta: AdapterMeta {
                rank: cfg.rank,
                alpha: cfg.alpha(),
                targets: shapes.keys().cloned().collect(),
            },
            pairs,
        })
    }

    /// Its shape, as a version records it.
    pub fn meta(&self) -> &AdapterMeta {
        &self.meta
    }

    /// `alpha / rank`.
    pub fn scale(&self) -> f64 {
        f64::from(self.meta.alpha) / self.meta.rank as f64
    }

    /// `A` and `B` of the matrix `name`, when adapted.
    pub fn pair(&self, name: &str) -> Option<&(Var, Var)> {
        self.pairs.get(name)
    }

    /// The trainable tensors, as the optimiser knows them (`<matrix>.lora_a`, `.lora_b`).
    pub fn vars(&self) -> BTreeMap<String, Var> {
        self.pairs
            .iter()
            .flat_map(|(name, (a, b))| {
                [
                    (format!("{name}.lora_a"), a.clone()),
                    (format!("{name}.lora_b"), b.clone()),
                ]
            })
            .collect()
    }

    /// `w + scale · A·B` for the matrix `name` (`w` itself when not adapted).
    pub fn merged(&self, name: &str, w: &Tensor) -> Result<Tensor, TrainError> {
        match self.pairs.get(name) {
            None => Ok(w.clone()),
            Some((a, b)) => Ok((w + (a.as_tensor().matmul(b.as_tensor())? * self.scale())?)?),
        }
    }

    /// Writes `A` and `B` of every matrix to `path`.
    pub fn save(&self, path: &Path) -> Result<(), TrainError> {
        let tensors: HashMap<String, Tensor> = self
            .vars()
            .into_iter()
            .map(|(k, v)| (k, v.as_tensor().clone()))
            .collect();
        candle_core::safetensors::save(&tensors, path)?;
        Ok(())
    }

    /// Reads the adapter `meta` describes from `path`, for matrices of the given shapes;
    /// a missing, misshapen or non-finite tensor is refused by name.
    pub fn load(
        path: &Path,
        meta: &AdapterMeta,
        shapes: &BTreeMap<String, (usize, usize)>,
        device: &Device,
    ) -> Result<Adapter, TrainError> {
        let bad = |why: String| TrainError::Version(format!("{}: {why}", path.display()));
        let mut file = candle_core::safetensors::load(path, device)
            .map_err(|e| bad(format!("not a readable safetensors file ({e})")))?;
        let mut pairs = BTreeMap::new();
        for name in &meta.targets {
            let &(inner, out) = shapes.get(name).ok_or_else(|| {
                bad(format!(
                    "the adapter targets `{name}`, which the decoder has no such matrix"
                ))
            })?;
            let mut take = |part: &str, want: (usize, usize)| -> Result<Var, TrainError> {
                let key = format!("{name}.{part}");
                let t = file
                    .remove(&key)
                    .ok_or_else(|| bad(format!("no tensor `{key}`")))?;
                if t.dims() != [want.0, want.1] || t.dtype() != DType::F32 {
                    return Err(bad(format!(
                        "tensor `{key}` is {:?} {:?}, the adapter's is F32 [{}, {}]",
                        t.dtype(),
                        t.dims(),
                        want.0,
                        want.1
                    )));
                }
                let finite = t
                    .flatten_all()?
                    .to_vec1::<f32>()?
                    .iter()
                    .all(|x| x.is_finite());
                if !finite {
                    return Err(bad(format!("tensor `{key}` holds a NaN or infinite value")));
                }
                Ok(Var::from_tensor(&t)?)
            };
            let a = take("lora_a", (inner, meta.rank))?;
            let b = take("lora_b", (meta.rank, out))?;
            pairs.insert(name.clone(), (a, b));
        }
        if let Some(extra) = file.keys().next() {
            return Err(bad(format!(
                "tensor `{extra}` belongs to no target of the adapter"
            )));
        }
        Ok(Adapter {
            meta: meta.clone(),
            pairs,
        })
    }
}
