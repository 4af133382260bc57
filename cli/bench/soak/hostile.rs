//! The hostile pages of `bench soak`: pages that break naive gyms (dialog and popup storms,
//! scripts that never yield, downloads, local files, replaced built-ins, hung images,
//! huge titles, endless navigation, print dialogs, permission prompts), the server that
//! serves them, and one episode on each with the check that the pool handled it the
//! documented way.

use std::net::Ipv4Addr;

use anyhow::{Context, anyhow, bail};
use axum::Router;
use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use browser_pool::{Action, BrowserPool, Observation, PageEvent, Session};

/// The hostile pages, each with what the pool must do about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum Hostile {
    /// 40 alerts in a row: answered, reported as one event.
    Alerts,
    /// 30 popups at once: at most `max_tabs` stay open, the rest are refused.
    Popups,
    /// A click handler that never returns: the script is stopped and reported.
    Spin,
    /// A download link: refused and reported.
    Download,
    /// A `file://` link: refused and reported.
    LocalFile,
    /// Built-ins replaced by broken ones: observed and driven all the same.
    Tampered,
    /// An image whose server never answers: neither `goto` nor clicks wait for it.
    HungImage,
    /// A 100,000-character title: clipped.
    HugeTitle,
    /// A page that hops between two sites every 100 ms: observations wait it out.
    Hopping,
    /// A redirect to itself, forever: the goto fails with Chromium's error, nothing hangs.
    Redirects,
    /// `window.print()`: no print dialog to wait on in a headless browser.
    Print,
    /// A page that reloads itself as soon as it has loaded.
    Reloading,
    /// Asks for geolocation, notifications and the camera: permission prompts nobody
    /// answers must not hold the page.
    Permissions,
}

/// Every hostile page, in the order the soak meets them.
pub const HOSTILE: [Hostile; 13] = [
    Hostile::Alerts,
    Hostile::Popups,
    Hostile::Spin,
    Hostile::Download,
    Hostile::LocalFile,
    Hostile::Tampered,
    Hostile::HungImage,
    Hostile::HugeTitle,
    Hostile::Hopping,
    Hostile::Redirects,
    Hostile::Print,
    Hostile::Reloading,
    Hostile::Permissions,
];

/// A page whose "Go" button sets the title to "went" after `script` ran.
fn with_go(title: &str, head: &str, go: &str) -> String {
    format!(
        r#"<!doctype html><html><head><title>{title}</title>{head}</head><body>
<h1>{title}</h1><button onclick="{go}; document.title = 'went'">Go</button></body></html>"#
    )
}

impl Hostile {
    /// Its name on the command line, in the report and in its page's path.
    pub fn name(self) -> String {
        use clap::ValueEnum;
        self.to_possible_value()
            .map(|v| v.get_name().to_string())
            .unwrap_or_default()
    }

    fn page(self) -> String {
        match self {
            Hostile::Alerts => with_go(
                "Alerts",
                "",
                "for (let i = 0; i < 40; i++) alert('storm ' + i)",
            ),
            Hostile::Popups => with_go(
                "Popups",
                "",
                "for (let i = 0; i < 30; i++) window.open('/plain', '_blank')",
            ),
            Hostile::Spin => with_go("Spin", "", "while (true) {}"),
            Hostile::Download => {
                r#"<!doctype html><title>Download</title><a href="/file.zip">Go</a>"#.into()
            }
            Hostile::LocalFile => {
                r#"<!doctype html><title>Local</title><a href="file:///etc/passwd">Go</a>"#.into()
            }
            Hostile::Tampered => with_go(
                "Tampered",
                "<script>Array.prototype.map = function () { return []; };
                  Array.from = function () { return []; };
                  String.prototype.trim = function () { return 'x'; };
                  window.getComputedStyle = function () { return { display: 'none' }; };
                  window.Symbol = undefined;</script>",
                "void 0",
            ),
            Hostile::HungImage => with_go("Hung image", "", "void 0")
                .replace("<body>", r#"<body><img src="/never" alt="never">"#),
            Hostile::HugeTitle => {
                r#"<!doctype html><title>t</title><script>document.title = 'Huge ' + 'x'.repeat(100000)</script>"#
                    .into()
            }
            Hostile::Hopping => r#"<!doctype html><title>Hopping</title><p>hopping</p><script>
setTimeout(() => {
  const u = new URL(location.href);
  u.hostname = u.hostname === 'localhost' ? '127.0.0.1' : 'localhost';
  location.href = u.href;
}, 100)</script>"#
                .into(),
            // A redirect, served by `serve_hostile`.
            Hostile::Redirects => String::new(),
            Hostile::Print => with_go("Print", "", "window.print()"),
            Hostile::Reloading => r#"<!doctype html><title>Reloading</title><p>reloading</p>
<script>addEventListener('load', () => setTimeout(() => location.reload(), 10))</script>"#
                .into(),
            Hostile::Permissions => with_go(
                "Permissions",
                "",
                "navigator.geolocation.getCurrentPosition(() => {}, () => {}); \
                 Notification.requestPermission(); \
                 navigator.mediaDevices && navigator.mediaDevices.getUserMedia({ video: true }).catch(() => {})",
            ),
        }
    }

    /// Whether the episode clicks the page's "Go".
    fn has_go(self) -> bool {
        !matches!(
            self,
            Hostile::HugeTitle | Hostile::Hopping | Hostile::Redirects | Hostile::Reloading
        )
    }

    /// What the pool must have done, from the observations before and after "Go".
    fn check(
        self,
        before: &Observation,
        after: &Observation,
        max_tabs: usize,
    ) -> Result<(), String> {
        let any = |f: fn(&PageEvent) -> bool| after.events.iter().any(f);
        let ok = match self {
            Hostile::Alerts => {
                after.title == "went" && any(|e| matches!(e, PageEvent::Dialog { .. }))
            }
            Hostile::Popups => {
                after.tabs.len() <= max_tabs && any(|e| matches!(e, PageEvent::Blocked { .. }))
            }
            Hostile::Spin => any(|e| matches!(e, PageEvent::ScriptStopped { .. })),
            Hostile::Download => any(|e| matches!(e, PageEvent::Download { .. })),
            Hostile::LocalFile => any(|e| matches!(e, PageEvent::Blocked { .. })),
            Hostile::Tampered => !before.elements.is_empty() && after.title == "went",
            Hostile::HungImage => after.title == "went",
            Hostile::HugeTitle => before.title.chars().count() == 300,
            // Checked as it opened: the goto reported the loop.
            Hostile::Hopping | Hostile::Reloading | Hostile::Redirects => true,
            Hostile::Print | Hostile::Permissions => after.title == "went",
        };
        if ok {
            Ok(())
        } else {
            Err(format!(
                "not handled as documented: title {:.60?}, {} tabs, {} events, the first {:?}",
                after.title,
                after.tabs.len(),
                after.events.len(),
                &after.events[..after.events.len().min(3)]
            ))
        }
    }
}

/// Serves the hostile pages, a plain page, a download and a URL that never answers.
pub async fn serve_hostile() -> anyhow::Result<(String, tokio::task::JoinHandle<()>)> {
    let mut app = Router::new()
        .route(
            "/plain",
            get(|| async { Html("<!doctype html><title>Plain</title><p>plain</p>") }),
        )
        .route(
            "/file.zip",
            get(|| async {
                (
                    [
                        (header::CONTENT_TYPE, "application/zip"),
                        (
                            header::CONTENT_DISPOSITION,
                            "attachment; filename=\"report.zip\"",
                        ),
                    ],
                    "PK-not-really-a-zip",
                )
                    .into_response()
            }),
        )
        .route("/never", get(std::future::pending::<String>));
    for h in HOSTILE {
        if h == Hostile::Redirects {
            app = app.route(
                "/redirects",
                get(|| async { axum::response::Redirect::temporary("/redirects") }),
            );
            continue;
        }
        let page = h.page();
        app = app.route(
            &format!("/{}", h.name()),
            get(move || std::future::ready(Html(page.clone()))),
        );
    }
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
    let base = format!("http://127.0.0.1:{}", listener.local_addr()?.port());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((base, task))
}

/// One hostile episode: the page, "Go" where it has one, the check, and a plain page after.
pub async fn hostile_episode(
    pool: &BrowserPool,
    base: &str,
    h: Hostile,
    max_tabs: usize,
) -> anyhow::Result<()> {
    let mut session = pool.lease().await.context("lease")?;
    let result = drive_hostile(&mut session, base, h, max_tabs).await;
    session.close().await;
    result
}

async fn drive_hostile(
    s: &mut Session,
    base: &str,
    h: Hostile,
    max_tabs: usize,
) -> anyhow::Result<()> {
    let opened = s
        .act(&Action::Goto(format!("{base}/{}", h.name())))
        .await
        .context("opening the page")?;
    match (h, opened.error) {
        (Hostile::Redirects, Some(e)) if e.contains("ERR_TOO_MANY_REDIRECTS") => {}
        (Hostile::Redirects, e) => bail!("a redirect loop was not reported: {e:?}"),
        (_, Some(e)) => bail!("opening the page: {e}"),
        (_, None) => {}
    }
    let before = s.observe().await.context("observing the page")?;
    let after = if h.has_go() {
        let go = before
            .elements
            .iter()
            .find(|e| e.label == "Go")
            .ok_or_else(|| anyhow!("no Go among {} elements", before.elements.len()))?;
        s.act(&browser_pool::parse_action(&format!("click({})", go.id))?)
            .await
            .context("clicking Go")?;
        s.observe().await.context("observing after Go")?
    } else {
        let mut last = s.observe().await.context("observing the page")?;
        for _ in 0..3 {
            last = s.observe().await.context("observing the page")?;
        }
        last
    };
    h.check(&before, &after, max_tabs).map_err(|e| anyhow!(e))?;
    let back = s
        .act(&Action::Goto(format!("{base}/plain")))
        .await
        .context("leaving for a plain page")?;
    let obs = s.observe().await.context("observing the plain page")?;
    if back.error.is_some() || obs.title != "Plain" {
        bail!(
            "not usable afterwards: {:?}, title {:?}",
            back.error,
            obs.title
        );
    }
    Ok(())
}
