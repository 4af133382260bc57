//! What a page is rendered at and how its screenshots are scaled: the part of the
//! configuration that changes what a policy sees, so a campaign can pin it per lease
//! instead of inheriting whatever the worker that runs its episode was started with.
//! (`browser-pool` reads it from and writes it into its pool configuration.)

use serde::{Deserialize, Serialize};

/// Viewport, pixel density and screenshot scale of a session's pages.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Screen {
    /// Viewport width in CSS pixels.
    pub width: u32,
    /// Viewport height in CSS pixels.
    pub height: u32,
    /// Device pixels per CSS pixel (2.0 renders like a high-DPI screen).
    #[serde(default = "one")]
    pub device_scale: f64,
    /// Screenshots are taken at this fraction of the rendered size.
    #[serde(default = "one")]
    pub screenshot_scale: f64,
}

fn one() -> f64 {
    1.0
}

impl Screen {
    /// What is out of range, as (field, message) pairs; empty when the screen is usable.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        // Beyond 8K every screenshot is hundreds of MB of pixels: a typo like 12800x720
        // should fail here, not as crawling episodes.
        for (field, v) in [("width", self.width), ("height", self.height)] {
            if !(100..=8192).contains(&v) {
                out.push((
                    field,
                    format!("must be between 100 and 8192 CSS pixels, not {v}"),
                ));
            }
        }
        if !(0.25..=4.0).contains(&self.device_scale) {
            out.push(("device_scale", "must be between 0.25 and 4".to_string()));
        }
        if !(0.05..=1.0).contains(&self.screenshot_scale) {
            out.push(("screenshot_scale", "must be between 0.05 and 1".to_string()));
        }
        out
    }

    /// `1280x720`, with the scales when they are not 1.
    pub fn label(&self) -> String {
        let mut s = format!("{}x{}", self.width, self.height);
        if self.device_scale != 1.0 {
            s.push_str(&format!(" @{}x", self.device_scale));
        }
        if self.screenshot_scale != 1.0 {
            s.push_str(&format!(", screenshots at {}", self.screenshot_scale));
        }
        s
    }
}
