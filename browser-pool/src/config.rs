//! Pool configuration, and the pool's side of [`Screen`]: the screen a configuration
//! renders and writing a lease's screen into one (`Screen` itself is part of the
//! observation space, `spaces`).

use crate::politeness::Politeness;
use std::path::PathBuf;
use std::time::Duration;

pub use spaces::Screen;

use crate::url_policy::UrlPolicy;

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
    /// Screenshot encoding.
    pub screenshot_format: ImageFormat,
    /// Device pixels per CSS pixel of every page (2.0 renders like a high-DPI screen).
    pub device_scale_factor: f64,
    /// Screenshots are taken at this fraction of the rendered size (0.5 halves both sides).
    pub screenshot_scale: f64,
    /// Also produce a screenshot with numbered element boxes (set-of-marks) for policies.
    pub set_of_marks: bool,
    /// Also read the accessibility tree as text (one CDP call per observation).
    pub accessibility_tree: bool,
    /// What to answer JavaScript dialogs with.
    pub dialogs: DialogPolicy,
    /// URL allow and deny lists for documents (frames and tabs included).
    pub urls: UrlPolicy,
    /// Replace a browser process after it has served this many sessions.
    pub recycle_after: Option<u64>,
    /// Replace a browser process once its process tree uses more than this (PSS, bytes).
    pub recycle_above_bytes: Option<u64>,
    /// Fresh contexts each browser keeps open ahead of leases (0: open on demand). Each
    /// costs a renderer's memory (~30 MB) and makes a lease near-instant.
    pub standby_contexts: usize,
    /// Most tabs a session keeps open: a popup past it is closed at once and reported
    /// (a page opening windows in a loop would otherwise start a renderer each).
    pub max_tabs: usize,
    /// Existing browsers to drive by their CDP address (`ws://host:port/devtools/browser/…`,
    /// or `http://host:port`): one slot each, beside the `browsers` launched locally.
    pub remote: Vec<String>,
    /// A page script that blocks a CDP call this long is terminated (hung-page guard).
    pub script_timeout: Duration,
    /// Limit for a single CDP call; a call that exceeds it marks the browser suspect.
    pub cdp_timeout: Duration,
    /// Limit for a navigation to answer: a page leaving for a server that does not answer
    /// (a link or form the agent used) is stopped past it, and stays where it was.
    pub navigation_timeout: Duration,
    /// How long a lease waits for a free context.
    pub lease_timeout: Duration,
    /// The DOM must be free of mutations this long before an observation is taken (on top
    /// of the action's pending short timeouts and frames, the CSS transitions it started and
    /// the requests in flight, which settling waits for; see `js/timers.js`, `js/settle.js`).
    /// It only has to bridge the gaps between the tasks of one update; it is also how long
    /// settling waits after a request finishes for the page's callback to use it.
    pub settle_quiet: Duration,
    /// Upper bound on waiting for the page to settle after an action.
    pub settle_max: Duration,
    /// Once loaded, a page that never goes quiet (animations, tickers) is not waited for
    /// longer than this (within `settle_max`).
    pub settle_restless: Duration,
    /// Keep Chromium's frame-rate limit (frames paced at 60 per second). Off by default:
    /// a screenshot then takes ~18 ms instead of 34-45 ms, but a page with an endless
    /// animation (a spinner, a carousel) renders as fast as it can, about a core of CPU
    /// each, also while the agent waits (8 such pages: 203% CPU against 24%; docs/benchmarks/pool-costs.md).
    /// Turn it on for real websites; the pool warns once when it meets such a page.
    pub frame_rate_limit: bool,
    /// Extra Chromium switches, without leading dashes.
    pub extra_args: Vec<String>,
    /// Limits per domain: sessions at once, requests per second, `Retry-After`.
    pub politeness: Politeness,
    /// Every request and response passes the browsers' gate, so that sessions can record
    /// them or be answered from a recording ([`Session::record_traffic`],
    /// [`Session::replay_traffic`]); each request costs a round trip more.
    ///
    /// [`Session::record_traffic`]: crate::Session::record_traffic
    /// [`Session::replay_traffic`]: crate::Session::replay_traffic
    pub capture_traffic: bool,
    /// The user agent every page sends and sees (`navigator.userAgent`); Chromium's own
    /// when `None`.
    pub user_agent: Option<String>,
}

/// How screenshots are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ImageFormat {
    /// JPEG at [`PoolConfig::jpeg_quality`]: small, what policies and replays use.
    #[default]
    Jpeg,
    /// Lossless PNG.
    Png,
}

impl ImageFormat {
    /// The MIME type of the encoded image.
    pub fn mime(self) -> &'static str {
        match self {
            ImageFormat::Jpeg => "image/jpeg",
            ImageFormat::Png => "image/png",
        }
    }
}

/// The answer given to every JavaScript dialog. Either way the dialog is recorded in the
/// next observation's events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DialogPolicy {
    /// OK / leave page / the prompt's default text.
    #[default]
    Accept,
    /// Cancel / stay on the page.
    Dismiss,
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
            screenshot_format: ImageFormat::Jpeg,
            device_scale_factor: 1.0,
            screenshot_scale: 1.0,
            set_of_marks: false,
            accessibility_tree: false,
            dialogs: DialogPolicy::Accept,
            urls: UrlPolicy::default(),
            recycle_after: Some(500),
            recycle_above_bytes: Some(3 << 30),
            standby_contexts: 1,
            max_tabs: 10,
            remote: Vec::new(),
            script_timeout: Duration::from_secs(4),
            cdp_timeout: Duration::from_secs(10),
            navigation_timeout: Duration::from_secs(15),
            lease_timeout: Duration::from_secs(120),
            settle_quiet: Duration::from_millis(8),
            settle_max: Duration::from_secs(5),
            settle_restless: Duration::from_millis(1500),
            frame_rate_limit: false,
            extra_args: Vec::new(),
            politeness: Politeness::none(),
            user_agent: None,
            capture_traffic: false,
        }
    }

    /// The executable named by `SURFGYM_CHROMIUM`, else `/usr/bin/chromium`.
    pub fn default_chromium() -> PathBuf {
        std::env::var_os("SURFGYM_CHROMIUM")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"))
    }

    /// Browser slots: the local processes plus the remote browsers (at least one).
    pub fn slots(&self) -> usize {
        (self.browsers + self.remote.len()).max(1)
    }

    /// Total concurrent sessions the pool can lease.
    pub fn capacity(&self) -> usize {
        self.slots() * self.contexts_per_browser.max(1)
    }

    /// Checks values that would otherwise fail later and obscurely.
    pub fn validate(&self) -> Result<(), String> {
        let screen = Screen::of(self);
        if let Some((field, message)) = screen.problems().into_iter().next() {
            let name = match field {
                "width" => "viewport width",
                "height" => "viewport height",
                "device_scale" => "device_scale_factor",
                other => other,
            };
            return Err(format!("{name} {message}"));
        }
        if !(1..=100).contains(&self.jpeg_quality) {
            return Err("jpeg_quality must be between 1 and 100".into());
        }
        if self.navigation_timeout < Duration::from_millis(100) {
            return Err("navigation_timeout must be at least 100 ms".into());
        }
        if let Some((field, message)) = self.politeness.problems().into_iter().next() {
            return Err(format!("politeness {field} {message}"));
        }
        if let Some(ua) = &self.user_agent
            && (ua.trim().is_empty() || ua.len() > 512 || ua.chars().any(char::is_control))
        {
            return Err("user_agent must be 1-512 printable characters".into());
        }
        if self.max_tabs == 0 {
            return Err("max_tabs must be at least 1".into());
        }
        if self.recycle_after == Some(0) {
            return Err("recycle_after must be at least 1 (or none)".into());
        }
        for url in &self.remote {
            // The CDP client is built without TLS: a wss:// or https:// address would only
            // fail later, at connection time, with a less helpful message.
            if url.starts_with("wss://") || url.starts_with("https://") {
                return Err(format!(
                    "remote browser {url:?}: TLS (wss://, https://) is not supported; reach it over ws:// or http://, through an SSH tunnel (ssh -L 9222:localhost:9222 HOST) on untrusted networks"
                ));
            }
            if !(url.starts_with("ws://") || url.starts_with("http://")) {
                return Err(format!(
                    "remote browser {url:?} must be a ws:// DevTools URL or an http:// endpoint"
                ));
            }
        }
        Ok(())
    }
}

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
