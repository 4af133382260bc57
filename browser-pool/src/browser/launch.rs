//! One Chromium process: launch with the flags this machine needs (or connect to a remote
//! one), keep its CDP handler polled, notice when it dies, open fresh browser contexts in
//! it, shut it down without leaving profiles or zombies behind.
//!
//! Knows the process and its connection only: what the pool keeps about a browser (its
//! leases, its standby contexts, its URL gate) is `browser.rs`'s.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chromiumoxide::Page;
use chromiumoxide::browser::{Browser, BrowserConfig};
use chromiumoxide::cdp::browser_protocol::browser::{
    BrowserContextId, SetDownloadBehaviorBehavior, SetDownloadBehaviorParams,
};
use chromiumoxide::cdp::browser_protocol::target::{
    CreateBrowserContextParams, CreateTargetParams,
};
use chromiumoxide::handler::viewport::Viewport;
use chromiumoxide::handler::{Handler, HandlerConfig};
use futures::StreamExt;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::RwLock;
use tokio::task::JoinHandle;

use crate::config::PoolConfig;
use crate::error::PoolError;

/// Switches every browser gets. The networking ones keep Chromium from dialling Google on a
/// machine with no internet (it would otherwise retry, many connections at a time); bfcache is
/// off so that "back" always reloads the page, as the practice sites (and most gyms) expect.
/// The spare renderer Chromium keeps ready for the context that navigated last is wasted
/// when every episode gets a fresh context (~40 ms of CPU each; +3-10% steps/s at 8
/// contexts on 2 cores without it, for ~6 ms more per cross-site navigation: docs/benchmarks/pool-costs.md).
/// Site isolation is off so that cross-site iframes share their page's renderer, where the
/// session can list and drive their elements (`session/frames.rs`); a gym's throwaway
/// contexts hold no secrets for it to guard.
const FLAGS: &[&str] = &[
    "disable-site-isolation-trials",
    "disable-gpu",
    "disable-background-networking",
    "disable-component-update",
    "disable-quic",
    "disable-sync",
    "no-first-run",
    "disable-smooth-scrolling",
    "no-default-browser-check",
    "deny-permission-prompts",
];
/// Lift the ~26 screenshots/s pacing measured with default flags, unless the pool keeps the
/// frame-rate limit (`PoolConfig::frame_rate_limit`: endless animations then cannot spin).
const UNPACED: &[&str] = &["disable-frame-rate-limit", "disable-gpu-vsync"];
const DISABLED_FEATURES: &[&str] = &[
    "BackForwardCache",
    "OptimizationHints",
    "MediaRouter",
    "InterestFeedContentSuggestions",
    "SpareRendererForSitePerProcess",
];

/// A running browser process (or a remote browser) and its CDP connection.
pub(crate) struct Chromium {
    pub(crate) browser: RwLock<Browser>,
    alive: Arc<AtomicBool>,
    pid: Option<u32>,
    handler: JoinHandle<()>,
    /// For a remote browser, the address it was reached at; it is never closed by us.
    remote: Option<String>,
    // Dropped after the process is gone, removing the profile directory.
    _profile: Option<tempfile::TempDir>,
}

impl Chromium {
    pub(crate) async fn launch(cfg: &PoolConfig) -> Result<Chromium, PoolError> {
        let launch_err = |message: String| PoolError::Launch {
            path: cfg.chromium.display().to_string(),
            message,
        };
        if !cfg.chromium.exists() {
            return Err(launch_err("no such file".into()));
        }
        super::profiles::reap_once();
        super::profiles::sweep_once();
        let profile = tempfile::Builder::new()
            .prefix(&super::profiles::prefix())
            .tempdir()
            .map_err(|e| launch_err(format!("cannot create a profile directory: {e}")))?;
        let mut builder = BrowserConfig::builder()
            .chrome_executable(&cfg.chromium)
            .no_sandbox()
            .user_data_dir(profile.path())
            .window_size(cfg.viewport_width, cfg.viewport_height)
            .viewport(viewport(cfg))
            .launch_timeout(Duration::from_secs(30))
            .request_timeout(cfg.cdp_timeout)
            .args(FLAGS.iter().copied());
        if !cfg.frame_rate_limit {
            builder = builder.args(UNPACED.iter().copied());
        }
        for feature in DISABLED_FEATURES {
            builder = builder.arg(("disable-features", *feature));
        }
        if let Some(ua) = &cfg.user_agent {
            builder = builder.arg(("user-agent", ua.as_str()));
        }
        for extra in &cfg.extra_args {
            builder = match extra.split_once('=') {
                Some((k, v)) => builder.arg((k, v)),
                None => builder.arg(extra.as_str()),
            };
        }
        let config = builder.build().map_err(launch_err)?;
        let (mut browser, handler) =
            tokio::time::timeout(Duration::from_secs(40), Browser::launch(config))
                .await
                .map_err(|_| launch_err("no DevTools endpoint after 40 s".into()))?
                .map_err(|e| launch_err(e.to_string()))?;

        let child = browser.get_mut_child();
        let pid = child.as_ref().and_then(|c| c.inner.id());
        // Chromium keeps logging to stderr; an undrained pipe eventually blocks it.
        if let Some(stderr) = child.and_then(|c| c.stderr.take()) {
            let mut lines = BufReader::new(stderr.into_inner()).lines();
            tokio::spawn(async move {
                while let Ok(Some(line)) = lines.next_line().await {
                    tracing::trace!(target: "chromium", pid, "{line}");
                }
            });
        }

        tracing::debug!(pid, "browser launched");
        Ok(Chromium::watch(browser, handler, pid, None, Some(profile)))
    }

    /// Connects to a browser someone else runs, by its DevTools WebSocket URL or HTTP
    /// endpoint. Its lifetime is not ours: shutting the pool down leaves it running.
    pub(crate) async fn connect(cfg: &PoolConfig, url: &str) -> Result<Chromium, PoolError> {
        let config = HandlerConfig {
            viewport: Some(viewport(cfg)),
            request_timeout: cfg.cdp_timeout,
            ..HandlerConfig::default()
        };
        let (browser, handler) = tokio::time::timeout(
            Duration::from_secs(20),
            Browser::connect_with_config(url, config),
        )
        .await
        .map_err(|_| PoolError::Remote {
            url: url.to_string(),
            message: "no answer after 20 s".into(),
        })?
        .map_err(|e| PoolError::Remote {
            url: url.to_string(),
            message: e.to_string(),
        })?;
        tracing::info!(url, "connected to a remote browser");
        Ok(Chromium::watch(
            browser,
            handler,
            None,
            Some(url.to_string()),
            None,
        ))
    }

    fn watch(
        browser: Browser,
        mut handler: Handler,
        pid: Option<u32>,
        remote: Option<String>,
        profile: Option<tempfile::TempDir>,
    ) -> Chromium {
        let alive = Arc::new(AtomicBool::new(true));
        let flag = alive.clone();
        let handler_task = tokio::spawn(async move {
            while let Some(event) = handler.next().await {
                if let Err(err) = event {
                    use chromiumoxide::error::CdpError as E;
                    // A killed browser yields one connection error and then never ends.
                    if matches!(err, E::Ws(_) | E::Io(_)) {
                        tracing::warn!(pid, error = %err, "browser connection lost");
                        break;
                    }
                    tracing::debug!(pid, error = %err, "CDP handler error");
                }
            }
            flag.store(false, Ordering::SeqCst);
        });
        Chromium {
            browser: RwLock::new(browser),
            alive,
            pid,
            handler: handler_task,
            remote,
            _profile: profile,
        }
    }

    /// The address of a remote browser; `None` for one this pool launched.
    pub(crate) fn remote(&self) -> Option<&str> {
        self.remote.as_deref()
    }

    /// Whether the process runs and its connection is up.
    pub(crate) fn is_alive(&self) -> bool {
        if !self.alive.load(Ordering::SeqCst) {
            return false;
        }
        match self.pid {
            Some(pid) => process_running(pid),
            None => true,
        }
    }

    pub(crate) fn mark_dead(&self) {
        self.alive.store(false, Ordering::SeqCst);
    }

    /// The browser's process id.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Closes the browser politely, then by force; waits for the process so the profile
    /// directory can be removed. A remote browser is not ours to close: only the
    /// connection is dropped.
    pub(crate) async fn close(&self) {
        self.mark_dead();
        if self.remote.is_some() {
            self.handler.abort();
            return;
        }
        let mut browser = self.browser.write().await;
        let polite = async {
            let _ = browser.close().await;
            let _ = browser.wait().await;
        };
        if tokio::time::timeout(Duration::from_secs(5), polite)
            .await
            .is_err()
        {
            let _ = browser.kill().await;
            let _ = tokio::time::timeout(Duration::from_secs(5), browser.wait()).await;
        }
        self.handler.abort();
    }
}

/// Opens a fresh browser context with one blank page in `browser`, downloads refused.
pub(crate) async fn open_context(
    cfg: &PoolConfig,
    browser: &Chromium,
) -> Result<(Page, BrowserContextId), PoolError> {
    let guard = browser.browser.read().await;
    let context = tokio::time::timeout(
        cfg.cdp_timeout,
        guard.create_browser_context(CreateBrowserContextParams::default()),
    )
    .await
    .map_err(|_| PoolError::Timeout {
        op: "Target.createBrowserContext",
        after: cfg.cdp_timeout,
    })?
    .map_err(|e| PoolError::from_cdp("Target.createBrowserContext", e))?;
    // Downloads are refused, but reported (the session turns the events into observations).
    let deny = SetDownloadBehaviorParams {
        behavior: SetDownloadBehaviorBehavior::Deny,
        browser_context_id: Some(context.clone()),
        download_path: None,
        events_enabled: Some(true),
    };
    match tokio::time::timeout(cfg.cdp_timeout, guard.execute(deny)).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, "could not deny downloads in a context"),
        Err(_) => {
            return Err(PoolError::Timeout {
                op: "Browser.setDownloadBehavior",
                after: cfg.cdp_timeout,
            });
        }
    }
    let params = CreateTargetParams {
        browser_context_id: Some(context.clone()),
        ..CreateTargetParams::new("about:blank")
    };
    let page = match tokio::time::timeout(cfg.cdp_timeout, guard.new_page(params)).await {
        Ok(Ok(page)) => page,
        failure => {
            let _ =
                tokio::time::timeout(cfg.cdp_timeout, guard.dispose_browser_context(context)).await;
            return Err(match failure {
                Err(_) => PoolError::Timeout {
                    op: "Target.createTarget",
                    after: cfg.cdp_timeout,
                },
                Ok(Err(e)) => PoolError::from_cdp("Target.createTarget", e),
                Ok(Ok(_)) => unreachable!("handled above"),
            });
        }
    };
    Ok((page, context))
}

fn viewport(cfg: &PoolConfig) -> Viewport {
    Viewport {
        width: cfg.viewport_width,
        height: cfg.viewport_height,
        device_scale_factor: Some(cfg.device_scale_factor),
        emulating_mobile: false,
        is_landscape: true,
        has_touch: false,
    }
}

/// Linux: a process is running when /proc has it and it is not a zombie.
fn process_running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state letter follows the parenthesised command name.
        Ok(stat) => match stat.rfind(')') {
            Some(i) => !matches!(stat[i + 1..].trim_start().chars().next(), Some('Z' | 'X')),
            None => true,
        },
        Err(_) => false,
    }
}
