//! How far an update moved the policy, and the guard that refuses an update that moved it
//! too far. A pretrained model can be wrecked by one update at a rate that suits another
//! (SmolLM2-135M collapsed in one GRPO update at 1e-3); the guard measures the update on
//! its own samples before it is published, and when a bound is crossed the update is
//! undone and retried at half the rate.

use serde::{Deserialize, Serialize};

use crate::TrainError;
use crate::objective::mean_k3;

/// Figures of an update, measured after it on its own samples: the new weights against
/// the weights it started from (and the reference model, when there is one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Health {
    /// Response tokens measured.
    pub tokens: usize,
    /// Mean of new/old probability ratios of the tokens.
    pub mean_ratio: f32,
    /// 5th, 50th and 95th percentiles of those ratios.
    pub ratio_p05: f32,
    /// See `ratio_p05`.
    pub ratio_p50: f32,
    /// See `ratio_p05`.
    pub ratio_p95: f32,
    /// Fraction of tokens whose ratio left [1 − clip, 1 + clip].
    pub clipped: f32,
    /// k3 estimate of KL(new ‖ old) per token.
    pub kl_old: f32,
    /// k3 estimate of KL(new ‖ reference) per token, when there is a reference.
    pub kl_ref: Option<f32>,
    /// Mean entropy of the new distributions at the response tokens (masked where the
    /// sample has a grammar mask).
    pub entropy: f32,
}

impl Health {
    /// Measures `after` (per sample, per token) against `before` and `reference`, with
    /// `entropy` the mean entropy of the new distributions and `clip` PPO's ε.
    pub fn measure(
        after: &[Vec<f32>],
        before: &[Vec<f32>],
        reference: Option<&[Vec<f32>]>,
        entropy: f32,
        clip: f32,
    ) -> Self {
        let flat = |v: &[Vec<f32>]| v.iter().flatten().copied().collect::<Vec<f32>>();
        let (now, then) = (flat(after), flat(before));
        let mut ratios: Vec<f32> = now.iter().zip(&then).map(|(a, b)| (a - b).exp()).collect();
        let tokens = ratios.len();
        let clipped = ratios.iter().filter(|r| (*r - 1.0).abs() > clip).count();
        let mean_ratio = ratios.iter().sum::<f32>() / tokens.max(1) as f32;
        ratios.sort_by(f32::total_cmp);
        let pct = |q: f64| -> f32 {
            if ratios.is_empty() {
                return 1.0;
            }
            ratios[((ratios.len() - 1) as f64 * q).round() as usize]
        };
        Self {
            tokens,
            mean_ratio: if tokens == 0 { 1.0 } else { mean_ratio },
            ratio_p05: pct(0.05),
            ratio_p50: pct(0.5),
            ratio_p95: pct(0.95),
            clipped: clipped as f32 / tokens.max(1) as f32,
            kl_old: mean_k3(&now, &then),
            kl_ref: reference.map(|r| mean_k3(&now, &flat(r))),
            entropy,
        }
    }
}

/// Bounds an update must stay within to be published; none set, none checked.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Guard {
    /// Largest KL(new ‖ reference) per token (needs a reference model).
    #[serde(default)]
    pub max_kl: Option<f32>,
    /// Largest fraction of tokens whose ratio left the clip range.
    #[serde(default)]
    pub max_clipped: Option<f32>,
    /// The mean ratio must stay within [1 / max_mean_ratio, max_mean_ratio].
    #[serde(default)]
    pub max_mean_ratio: Option<f32>,
    /// How many times an update is retried at half the previous rate.
    #[serde(default = "default_retries")]
    pub retries: u32,
}

fn default_retries() -> u32 {
    2
}

impl Default for Guard {
    fn default() -> Self {
        Self {
            max_kl: None,
            max_clipped: None,
            max_mean_ratio: None,
            retries: default_retries(),
        }
    }
}

impl Guard {
    /// Checks the bounds, naming the bad one.
    pub fn validate(&self) -> Result<(), TrainError> {
        let bad = |f: &str, why: &str| Err(TrainError::Input(format!("guard.{f}: {why}")));
        if let Some(k) = self.max_kl
            && !(k > 0.0 && k.is_finite())
        {
            return bad("max_kl", "must be a positive number");
        }
        if let Some(c) = self.max_clipped
            && !(c > 0.0 && c <= 1.0)
        {
            return bad("max_clipped", "must be in (0, 1]");
        }
        if let Some(r) = self.max_mean_ratio
            && !(r > 1.0 && r.is_finite())
        {
            return bad("max_mean_ratio", "must be a number above 1");
        }
        if self.retries > 8 {
            return bad("retries", "must be at most 8 (each halves the rate)");
        }
        Ok(())
    }

    /// The first bound `h` crosses, in words; None when it stays within all of them.
    pub fn crossed(&self, h: &Health) -> Option<String> {
        if let (Some(max), Some(kl)) = (self.max_kl, h.kl_ref)
            && kl > max
        {
            return Some(format!("KL to the reference {kl:.4} > max_kl {max}"));
        }
        if let Some(max) = self.max_clipped
            && h.clipped > max
        {
            return Some(format!(
                "clipped fraction {:.3} > max_clipped {max}",
                h.clipped
            ));
        }
        if let Some(max) = self.max_mean_ratio
            && !(h.mean_ratio <= max && h.mean_ratio >= 1.0 / max)
        {
            return Some(format!(
                "mean ratio {:.3} outside [{:.3}, {max}]",
                h.mean_ratio,
                1.0 / max
            ));
        }
        None
    }
}

/// One try of a guarded update.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    /// The fraction of the configured rate it ran at (1, 0.5, 0.25, ...).
    pub lr_scale: f64,
    /// What it did.
    pub health: Health,
    /// The bound it crossed, if any.
    pub crossed: Option<String>,
}

/// What the guard decided.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GuardReport {
    /// Every try, in order.
    pub attempts: Vec<Attempt>,
    /// Whether the last try stayed within the bounds. When false the weights and the
    /// optimiser are as before the update: what is published is the parent's weights.
    pub accepted: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_measures_ratios_and_kl() {
        let before = vec![vec![-1.0f32, -2.0], vec![-0.5]];
        let same = Health::measure(&before, &before, Some(&before), 0.3, 0.2);
        assert_eq!(same.tokens, 3);
        assert!((same.mean_ratio - 1.0).abs() < 1e-6);
        assert_eq!(same.clipped, 0.0);
        assert!(same.kl_old.abs() < 1e-6 && same.kl_ref.unwrap().abs() < 1e-6);
        // Every token twice as likely: ratio 2, clipped, KL > 0.
        let after: Vec<Vec<f32>> = before
            .iter()
            .map(|v| v.iter().map(|x| x + 2f32.ln()).collect())
            .collect();
        let moved = Health::measure(&after, &before, None, 0.3, 0.2);
        assert!((moved.mean_ratio - 2.0).abs() < 1e-5 && (moved.ratio_p95 - 2.0).abs() < 1e-5);
        assert_eq!(moved.clipped, 1.0);
        assert!(moved.kl_old > 0.1, "{moved:?}");
        assert_eq!(moved.kl_ref, None);
    }

    #[test]
    fn the_guard_names_the_bound_crossed() {
        let h = Health {
            tokens: 10,
            mean_ratio: 1.6,
            clipped: 0.4,
            kl_ref: Some(0.02),
            ..Health::default()
        };
        let g = Guard {
            max_kl: Some(0.05),
            max_clipped: Some(0.5),
            max_mean_ratio: Some(1.5),
            retries: 2,
        };
        assert!(g.crossed(&h).unwrap().contains("mean ratio"));
        let g = Guard {
            max_kl: Some(0.01),
            ..g
        };
        assert!(g.crossed(&h).unwrap().contains("KL"));
        assert_eq!(Guard::default().crossed(&h), None);
        let bad = Guard {
            max_mean_ratio: Some(0.9),
            ..Guard::default()
        };
        assert!(
            bad.validate()
                .unwrap_err()
                .to_string()
                .contains("guard.max_mean_ratio")
        );
    }
}
