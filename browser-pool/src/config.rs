//! Pool configuration.

use std::path::PathBuf;
use std::time::Duration;

/// Everything that shapes how browsers are launched and pages are driven.
///
/// Built with [`PoolConfig::new`], which fills in the measured defaults; fields are public
/// so callers change only what they mean to.
#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// Chromium executable.
    pub chromium: PathBuf,
    /// Browser processes kept warm.
    pub browsers: usize,
    /// Concurrent browser contexts (episodes) per browser process.
    pub contexts_per_browser: usize,
    /// Viewport width in CSS pixels.
    pub viewport_width: u32,
    /// Viewport height in CSS pixels.
    pub viewport_height: u32,
    /// JPEG quality of observation screenshots (1-100).
    pub jpeg_quality: u8,
    /// Limit for a single CDP call; a call that exceeds it marks the browser suspect.
    pub cdp_timeout: Duration,
    /// Limit for a navigation (goto, back) to load.
    pub navigation_timeout: Duration,
    /// How long a lease waits for a free context.
    pub lease_timeout: Duration,
    /// The DOM must be free of mutations this long before an observation is taken.
    pub settle_quiet: Duration,
    /// Upper bound on waiting for the page to settle after an action.
    pub settle_max: Duration,
    /// Extra Chromium switches, without leading dashes.
    pub extra_args: Vec<String>,
}

impl PoolConfig {
    /// Defaults measured on a 2-core machine (see STACK-NOTES): 1280x720, JPEG q80.
    pub fn new(chromium: impl Into<PathBuf>) -> Self {
        PoolConfig {
            chromium: chromium.into(),
            browsers: 1,
            contexts_per_browser: 4,
            viewport_width: 1280,
            viewport_height: 720,
            jpeg_quality: 80,
            cdp_timeout: Duration::from_secs(10),
            navigation_timeout: Duration::from_secs(15),
            lease_timeout: Duration::from_secs(120),
            settle_quiet: Duration::from_millis(60),
            settle_max: Duration::from_secs(5),
            extra_args: Vec::new(),
        }
    }

    /// The executable named by `SURFGYM_CHROMIUM`, else `/usr/bin/chromium`.
    pub fn default_chromium() -> PathBuf {
        std::env::var_os("SURFGYM_CHROMIUM")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"))
    }

    /// Total concurrent sessions the pool can lease.
    pub fn capacity(&self) -> usize {
        self.browsers.max(1) * self.contexts_per_browser.max(1)
    }
}
