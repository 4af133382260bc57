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
    /// Screenshot encoding.
    #[arg(long, value_enum, default_value_t = ShotFormat::Jpeg, global = true)]
    pub screenshot_format: ShotFormat,
    /// Device pixels per CSS pixel (2 renders like a high-DPI screen).
    #[arg(long, default_value_t = 1.0, global = true)]
    pub device_scale: f64,
    /// Read the accessibility tree every step (text-only policies use it).
    #[arg(long, global = true)]
    pub ax_tree: bool,
    /// Longest wait for a page to settle after an action, in ms.
    #[arg(long, default_value_t = 5000, global = true)]
    pub settle_max_ms: u64,
    /// Keep Chromium's frame-rate limit: screenshots take ~34-45 ms instead of ~18, but pages
    /// with endless animations (spinners, carousels: real websites) cannot each burn a core.
    #[arg(long, global = true)]
    pub frame_rate_limit: bool,
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
        cfg.recycle_above_bytes =
            (self.recycle_above_mb > 0).then_some(self.recycle_above_mb << 20);
        cfg.screenshot_format = match self.screenshot_format {
            ShotFormat::Jpeg => ImageFormat::Jpeg,
            ShotFormat::Png => ImageFormat::Png,
        };
        cfg.device_scale_factor = self.device_scale;
        cfg.accessibility_tree = self.ax_tree;
        cfg.settle_max = Duration::from_millis(self.settle_max_ms);
        cfg.frame_rate_limit = self.frame_rate_limit;
        if let Err(e) = cfg.validate() {
            bail!("browser options: {e}");
        }
        Ok(())
    }
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
        ]);
        let mut cfg = PoolConfig::new("/usr/bin/chromium");
        cli.browser.apply(&mut cfg).unwrap();
        assert_eq!(cfg.remote.len(), 1);
        assert!(cfg.urls.check("http://x.ads.test/").is_err());
        assert_eq!(cfg.dialogs, DialogPolicy::Dismiss);
        assert_eq!(cfg.recycle_after, None);
        assert_eq!(cfg.screenshot_format, ImageFormat::Png);
        assert!(cfg.accessibility_tree);

        let bad = Cli::parse_from(["x", "--remote-browser", "10.0.0.2:9222"]);
        let err = bad.browser.apply(&mut cfg).unwrap_err().to_string();
        assert!(err.contains("ws:// DevTools URL"), "{err}");
        let tls = Cli::parse_from(["x", "--remote-browser", "wss://browsers.example/x"]);
        let err = tls.browser.apply(&mut cfg).unwrap_err().to_string();
        assert!(err.contains("TLS") && err.contains("ssh -L"), "{err}");
    }
}
