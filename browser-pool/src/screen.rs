//! The pool's side of [`Screen`]: the screen a pool configuration renders, and writing a
//! lease's screen into one. `Screen` itself is part of the observation space (`spaces`).

pub use spaces::Screen;

use crate::config::PoolConfig;

/// Reading a [`Screen`] from a [`PoolConfig`] and writing one into it (a trait because
/// `Screen` is defined in `spaces`, which knows no pool configuration).
pub trait PoolScreen {
    /// The screen a pool configuration renders by default.
    fn of(cfg: &PoolConfig) -> Screen;
    /// Writes this screen into a pool configuration.
    fn apply(&self, cfg: &mut PoolConfig);
}

impl PoolScreen for Screen {
    fn of(cfg: &PoolConfig) -> Screen {
        Screen {
            width: cfg.viewport_width,
            height: cfg.viewport_height,
            device_scale: cfg.device_scale_factor,
            screenshot_scale: cfg.screenshot_scale,
        }
    }

    fn apply(&self, cfg: &mut PoolConfig) {
        cfg.viewport_width = self.width;
        cfg.viewport_height = self.height;
        cfg.device_scale_factor = self.device_scale;
        cfg.screenshot_scale = self.screenshot_scale;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_values_are_named() {
        let ok = Screen::of(&PoolConfig::new("/x"));
        assert!(ok.problems().is_empty());
        let bad = Screen {
            width: 50,
            height: 9000,
            device_scale: 0.0,
            screenshot_scale: 1.5,
        };
        let fields: Vec<_> = bad.problems().into_iter().map(|(f, _)| f).collect();
        assert_eq!(
            fields,
            ["width", "height", "device_scale", "screenshot_scale"]
        );
        let parsed: Screen = serde_json::from_str(r#"{"width": 332, "height": 214}"#).unwrap();
        assert_eq!((parsed.device_scale, parsed.screenshot_scale), (1.0, 1.0));
        assert_eq!(parsed.label(), "332x214");
    }
}
