//! Browser-pool options shared by every command that drives browsers.

use std::time::Duration;

use anyhow::bail;
use browser_pool::{DialogPolicy, ImageFormat, PoolConfig, UrlPolicy};
use clap::{Args, ValueEnum};

/// How the pool's browsers are reached, contained and observed.
#[derive(Args, Clone, Debug)]
pub struct BrowserArgs {
    /// A running Chrome to drive by its CDP address (`ws://host:9222/devtools/browser/…`
    /// or `http://host:9222`); repeat for several. Each adds `--contexts` sessions.
    #[arg(long = "remote-browser", global = true)]
    pub remote: Vec<String>,
    /// Only URLs matching one of these may load (host glob like `*.shop.test`, or a URL
    /// glob with `://`); repeat for several.
    #[arg(long = "allow-url", global = true)]
    pub allow: Vec<String>,
    /// URLs matching any of these never load (same patterns); deny wins over allow.
    #[arg(long = "deny-url", global = true)]
    pub deny: Vec<String>,
    /// Answer JavaScript dialogs with Cancel instead of OK.
    #[arg(long, global = true)]
    pub dismiss_dialogs: bool,
    /// Replace a browser process after this many episodes (0: never).
    #[arg(long, default_value_t = 500, global = true)]
    pub recycle_after: u64,
    /// Replace a browser process whose process tree uses more than this many MB (0: never).
    #[arg(long, default_value_t = 3072, global = true)]
    pub recycle_above_mb: u64,
    /// Fresh browser contexts each browser keeps open ahead of leases (0: open on demand).
    #[arg(long, default_value_t = 1, global = true)]
    pub standby_contexts: usize,
    /// Most tabs an episode keeps open; popups past it are closed as they open (reported).
    #[arg(long, default_value_t = 10, global = true)]
    pub max_tabs: usize,
    /// Screenshot encoding.
    #[arg(long, value_enum, default_value_t = ShotFormat::Jpeg, global = true)]
    pub screenshot_format: ShotFormat,
    /// Page size in CSS pixels, WIDTHxHEIGHT (BrowserGym's MiniWoB++ default is 332x214
    /// at `--device-scale 1.5`).
    #[arg(long, default_value = "1280x720", value_parser = parse_viewport, global = true)]
    pub viewport: (u32, u32),
    /// Device pixels per CSS pixel (2 renders like a high-DPI screen).
    #[arg(long, default_value_t = 1.0, global = true)]
    pub device_scale: f64,
    /// Screenshots are taken at this fraction of the rendered size (0.5 halves both sides).
    #[arg(long, default_value_t = 1.0, global = true)]
    pub screenshot_scale: f64,
    /// JPEG quality of screenshots, 1-100.
    #[arg(long, default_value_t = 80, global = true)]
    pub jpeg_quality: u8,
    /// Read the accessibility tree every step (text-only policies use it).
    #[arg(long, global = true)]
    pub ax_tree: bool,
    /// Longest wait for a page to settle after an action, in ms.
    #[arg(long, default_value_t = 5000, global = true)]
    pub settle_max_ms: u64,
    /// Longest wait for a page the agent is leaving (a link, a form) to answer, in ms;
    /// past it the loading is stopped and reported, and the agent stays on the old page.
    #[arg(long, default_value_t = 15000, global = true)]
    pub navigation_timeout_ms: u64,
    /// Keep Chromium's frame-rate limit: screenshots take ~34-45 ms instead of ~18, but pages
    /// with endless animations (spinners, carousels: real websites) cannot each burn a core.
    #[arg(long, global = true)]
    pub frame_rate_limit: bool,
    /// Politeness: browser sessions open at once per domain (the domain an episode starts
    /// on); an episode past it waits for a slot, and the wait is stored with it.
    #[arg(long, global = true)]
    pub per_domain_sessions: Option<u32>,
    /// Politeness: requests per second per domain, every request of every page, all
    /// sessions together (each request is held until its domain has a token).
    #[arg(long, global = true)]
    pub per_domain_rps: Option<f64>,
    /// Politeness: requests a domain may get at once before --per-domain-rps applies.
    #[arg(long, default_value_t = 4, global = true)]
    pub per_domain_burst: u32,
    /// Politeness: check every document a page loads against its site's robots.txt (as the
    /// robot named by --robots-agent); a disallowed one is refused before it is requested.
    /// Each site's file is read once a day through the browser.
    #[arg(long, global = true)]
    pub robots_txt: bool,
    /// The product token robots.txt groups are matched against (with --robots-txt).
    #[arg(long, default_value = "surfgym", global = true)]
    pub robots_agent: String,
    /// Every request and response passes the browsers' gate, so that campaigns can record
    /// their traffic or replay a recording (`run --record`, `run --replay` turn it on).
    #[arg(long, global = true)]
    pub capture_traffic: bool,
    /// The user agent pages see (launched browsers; a remote browser keeps its own).
    #[arg(long, global = true)]
    pub user_agent: Option<String>,
}

/// Screenshot encodings on the command line.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShotFormat {
    /// JPEG (small; what replays and policies use).
    Jpeg,
    /// PNG (lossless).
    Png,
}

impl BrowserArgs {
    /// Writes these options into a pool configuration and checks the result.
    pub fn apply(&self, cfg: &mut PoolConfig) -> anyhow::Result<()> {
        cfg.remote = self.remote.clone();
        cfg.urls = UrlPolicy {
            allow: self.allow.clone(),
            deny: self.deny.clone(),
        };
        cfg.dialogs = if self.dismiss_dialogs {
            DialogPolicy::Dismiss
        } else {
            DialogPolicy::Accept
        };
        cfg.recycle_after = (self.recycle_after > 0).then_some(self.recycle_after);
        cfg.standby_contexts = self.standby_contexts;
        cfg.max_tabs = self.max_tabs;
        cfg.recycle_above_bytes =
            (self.recycle_above_mb > 0).then_some(self.recycle_above_mb << 20);
        cfg.screenshot_format = match self.screenshot_format {
            ShotFormat::Jpeg => ImageFormat::Jpeg,
            ShotFormat::Png => ImageFormat::Png,
        };
        (cfg.viewport_width, cfg.viewport_height) = self.viewport;
        cfg.device_scale_factor = self.device_scale;
        cfg.screenshot_scale = self.screenshot_scale;
        cfg.jpeg_quality = self.jpeg_quality;
        cfg.accessibility_tree = self.ax_tree;
        cfg.settle_max = Duration::from_millis(self.settle_max_ms);
        cfg.navigation_timeout = Duration::from_millis(self.navigation_timeout_ms);
        cfg.frame_rate_limit = self.frame_rate_limit;
        cfg.politeness.contexts_per_domain = self.per_domain_sessions;
        cfg.politeness.requests_per_sec = self.per_domain_rps;
        cfg.politeness.burst = self.per_domain_burst;
        cfg.politeness.robots = self.robots_txt.then(|| self.robots_agent.clone());
        cfg.user_agent = self.user_agent.clone();
        cfg.capture_traffic = self.capture_traffic;
        if let Err(e) = cfg.validate() {
            bail!("browser options: {e}");
        }
        Ok(())
    }
}

/// `--viewport WIDTHxHEIGHT`; the pool checks the range, this only the shape.
fn parse_viewport(s: &str) -> Result<(u32, u32), String> {
    let shape = || format!("{s:?} is not WIDTHxHEIGHT in CSS pixels (e.g. 1280x720)");
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(shape)?;
    Ok((
        w.trim().parse().map_err(|_| shape())?,
        h.trim().parse().map_err(|_| shape())?,
    ))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        browser: BrowserArgs,
    }

    #[test]
    fn flags_reach_the_pool_configuration() {
        let cli = Cli::parse_from([
            "x",
            "--remote-browser",
            "ws://10.0.0.2:9222/devtools/browser/abc",
            "--deny-url",
            "*.ads.test",
            "--dismiss-dialogs",
            "--recycle-after",
            "0",
            "--screenshot-format",
            "png",
            "--ax-tree",
            "--viewport",
            "332x214",
            "--device-scale",
            "1.5",
            "--screenshot-scale",
            "0.5",
            "--jpeg-quality",
            "60",
            "--per-domain-sessions",
            "2",
            "--per-domain-rps",
            "5",
            "--user-agent",
            "surfgym-test/1",
        ]);
        let mut cfg = PoolConfig::new("/usr/bin/chromium");
        cli.browser.apply(&mut cfg).unwrap();
        assert_eq!(cfg.remote.len(), 1);
        assert!(cfg.urls.check("http://x.ads.test/").is_err());
        assert_eq!(cfg.dialogs, DialogPolicy::Dismiss);
        assert_eq!(cfg.recycle_after, None);
        assert_eq!(cfg.screenshot_format, ImageFormat::Png);
        assert!(cfg.accessibility_tree);
        assert_eq!((cfg.viewport_width, cfg.viewport_height), (332, 214));
        assert_eq!(cfg.device_scale_factor, 1.5);
        assert_eq!(cfg.screenshot_scale, 0.5);
        assert_eq!(cfg.jpeg_quality, 60);
        assert_eq!(cfg.politeness.contexts_per_domain, Some(2));
        assert_eq!(cfg.politeness.requests_per_sec, Some(5.0));
        assert_eq!(cfg.politeness.burst, 4);
        assert_eq!(cfg.user_agent.as_deref(), Some("surfgym-test/1"));
        let bad = Cli::parse_from(["x", "--per-domain-rps", "0"]);
        let err = bad.browser.apply(&mut PoolConfig::new("/usr/bin/chromium"));
        assert!(
            err.unwrap_err().to_string().contains("requests_per_sec"),
            "names the setting"
        );

        for shape in ["1280", "1280x", "wide x 720", "0.5x720"] {
            let err = Cli::try_parse_from(["x", "--viewport", shape])
                .err()
                .unwrap()
                .to_string();
            assert!(
                err.contains("--viewport") && err.contains("WIDTHxHEIGHT"),
                "{err}"
            );
        }
        let small = Cli::parse_from(["x", "--viewport", "50x720"]);
        let err = small.browser.apply(&mut cfg).unwrap_err().to_string();
        assert!(
            err.contains("viewport width must be between 100 and 8192"),
            "{err}"
        );
        let quality = Cli::parse_from(["x", "--jpeg-quality", "0"]);
        let err = quality.browser.apply(&mut cfg).unwrap_err().to_string();
        assert!(err.contains("jpeg_quality"), "{err}");

        let bad = Cli::parse_from(["x", "--remote-browser", "10.0.0.2:9222"]);
        let err = bad.browser.apply(&mut cfg).unwrap_err().to_string();
        assert!(err.contains("ws:// DevTools URL"), "{err}");
        let tls = Cli::parse_from(["x", "--remote-browser", "wss://browsers.example/x"]);
        let err = tls.browser.apply(&mut cfg).unwrap_err().to_string();
        assert!(err.contains("TLS") && err.contains("ssh -L"), "{err}");
    }
}
