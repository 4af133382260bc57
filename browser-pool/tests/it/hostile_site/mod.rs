//! The hostile test site shared by `hostile.rs`, `hostile_network.rs` and
//! `hostile_browsers.rs`: its pages, its server, the pool they run on, and their helpers.

// Each test binary uses part of it.
#![allow(dead_code)]

use std::time::Duration;

use browser_pool::{Action, BrowserPool, PoolConfig, parse_action};

use crate::common::{self, Route, html};

pub const INDEX: &str = r#"<!doctype html><html><head><title>Hostile</title></head><body>
<h1 id="h">Start</h1>
<button id="spin" onclick="while (true) {}">Spin forever</button>
<button id="storm" onclick="for (let i = 0; i < 40; i++) alert('storm'); document.getElementById('h').textContent = 'after storm'">Storm</button>
<button id="confirm" onclick="document.getElementById('h').textContent = confirm('Sure?') ? 'yes' : 'no'">Confirm</button>
<button id="popup" onclick="window.open('/second.html', '_blank')">Open popup</button>
<a id="blank" href="/second.html" target="_blank">New tab link</a>
<a id="download" href="/file.zip">Download</a>
<a id="local" href="file:///etc/passwd">Local file</a>
<a id="denied" href="/admin.html">Admin</a>
<a id="denied-popup" href="/admin.html" target="_blank">Admin in a tab</a>
</body></html>"#;

pub const SECOND: &str = r#"<!doctype html><html><head><title>Second</title></head><body>
<p id="p">second page</p><button id="close" onclick="window.close()">Close me</button></body></html>"#;

pub const ADMIN: &str =
    r#"<!doctype html><html><head><title>Admin</title></head><body>secret</body></html>"#;

pub const LOOP_AT_LOAD: &str = r#"<!doctype html><html><head><title>Looping</title></head><body>
<p id="before">before</p><script>while (true) {}</script><p id="after">after</p></body></html>"#;

/// Hops to the same path on the other loopback name 100 ms after loading: `127.0.0.1` and
/// `localhost` are different sites, so every hop swaps the page's renderer process.
pub const HOPPING: &str = r#"<!doctype html><html><head><title>Hopping</title></head><body>
<p>hopping</p><script>setTimeout(() => {
  const u = new URL(location.href);
  u.hostname = u.hostname === 'localhost' ? '127.0.0.1' : 'localhost';
  location.href = u.href;
}, 100)</script></body></html>"#;

/// Two iframes that start downloads as they load: one from this origin, one from another
/// site (an out-of-process frame).
pub const FRAMED: &str = r#"<!doctype html><html><head><title>Framed</title></head><body>
<iframe src="/inner-same.html"></iframe>
<script>
  const f = document.createElement('iframe');
  f.src = location.href.replace('127.0.0.1', 'localhost').replace('/framed.html', '/inner-cross.html');
  document.body.appendChild(f);
</script></body></html>"#;

/// A frame that downloads `file` once loaded.
pub fn downloading_frame(path: &'static str, file: &str) -> Route {
    html(
        path,
        format!(
            r#"<!doctype html><body><a id="d" href="{file}">get</a>
<script>document.getElementById('d').click()</script></body>"#
        ),
    )
}

pub fn attachment(path: &'static str, headers: &'static str) -> Route {
    Route {
        path,
        status: "200 OK",
        content_type: "application/zip",
        headers,
        body: "PK-not-really-a-zip".into(),
        delay: std::time::Duration::ZERO,
    }
}

/// Asks the browser to confirm before leaving.
pub const KEEP: &str = r#"<!doctype html><html><head><title>Keep</title></head><body>
<button id="touch">Touch</button><a id="away" href="/second.html">Away</a>
<script>addEventListener('beforeunload', e => { e.preventDefault(); e.returnValue = ''; })</script>
</body></html>"#;

/// A same-origin iframe with controls, and a cross-site one.
pub const NESTED: &str = r#"<!doctype html><html><head><title>Nested</title></head><body>
<button>Top button</button><iframe src="/controls.html"></iframe>
<script>
  const f = document.createElement('iframe');
  f.src = location.href.replace('127.0.0.1', 'localhost').replace('/nested.html', '/controls.html');
  document.body.appendChild(f);
</script></body></html>"#;

pub async fn serve() -> String {
    common::serve(vec![
        html("/nested.html", NESTED),
        html(
            "/controls.html",
            r#"<button>Inner button</button><a href="/second.html">Inner link</a>"#,
        ),
        html("/keep.html", KEEP),
        html("/framed.html", FRAMED),
        downloading_frame("/inner-same.html", "/file.zip"),
        downloading_frame("/inner-cross.html", "/other.zip"),
        attachment(
            "/other.zip",
            "Content-Disposition: attachment; filename=\"cross.zip\"\r\n",
        ),
        html("/hop.html", HOPPING),
        html("/", INDEX),
        html("/second.html", SECOND),
        html("/admin.html", ADMIN),
        html("/loop.html", LOOP_AT_LOAD),
        attachment(
            "/file.zip",
            "Content-Disposition: attachment; filename=\"report.zip\"\r\n",
        ),
    ])
    .await
}

pub fn config() -> PoolConfig {
    let mut cfg = PoolConfig::new(PoolConfig::default_chromium());
    cfg.browsers = 1;
    cfg.contexts_per_browser = 2;
    cfg.script_timeout = Duration::from_secs(2);
    cfg
}

/// What an action that must not wait may take on a loaded machine (on an idle one it takes
/// well under a second): the bound a test puts on "at once".
pub const PROMPT: Duration = Duration::from_secs(20);

/// `cfg` with every limit an action could wait out (the page limit, the navigation
/// timeout, settling's cap) at a minute: an action that waits for one where it must not
/// takes far longer than [`PROMPT`], so a test tells "at once" from "waited" with a bound
/// no busy machine reaches.
pub fn patient(mut cfg: PoolConfig) -> PoolConfig {
    let minute = Duration::from_secs(60);
    cfg.script_timeout = minute;
    cfg.cdp_timeout = minute;
    cfg.navigation_timeout = minute;
    cfg.settle_max = minute;
    cfg.settle_restless = minute;
    cfg
}

pub fn act(line: &str) -> Action {
    parse_action(line).unwrap()
}

pub async fn heading(s: &browser_pool::Session) -> String {
    s.query_selector("#h")
        .await
        .unwrap()
        .unwrap()
        .map(|e| e.text)
        .unwrap_or_default()
}

/// Renderer processes under `pid`, by their command line.
pub fn renderers(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Ok(p) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd);
        let mine = std::fs::read_to_string(format!("/proc/{p}/stat"))
            .ok()
            .and_then(|s| {
                let rest = &s[s.rfind(')')? + 2..];
                rest.split_whitespace().nth(1)?.parse::<u32>().ok()
            })
            .is_some_and(|ppid| ppid == pid || is_descendant(ppid, pid));
        if mine && cmd.contains("--type=renderer") {
            out.push(p);
        }
    }
    out
}

pub fn is_descendant(mut p: u32, root: u32) -> bool {
    for _ in 0..8 {
        if p == root {
            return true;
        }
        let Some(parent) = std::fs::read_to_string(format!("/proc/{p}/stat"))
            .ok()
            .and_then(|s| {
                let rest = &s[s.rfind(')')? + 2..];
                rest.split_whitespace().nth(1)?.parse::<u32>().ok()
            })
        else {
            return false;
        };
        if parent <= 1 {
            return false;
        }
        p = parent;
    }
    false
}

/// After a hostile page: the session still opens and observes the start page; then both
/// are closed.
pub async fn still_usable(pool: BrowserPool, mut s: browser_pool::Session, base: &str) {
    let r = s.act(&Action::Goto(format!("{base}/"))).await.unwrap();
    assert_eq!(r.error, None);
    assert_eq!(s.observe().await.unwrap().title, "Hostile");
    s.close().await;
    pool.shutdown().await;
}

/// A pool observing accessibility trees, and a session opened on `path` of the test site.
pub async fn with_ax_tree_on(path: &str) -> (BrowserPool, browser_pool::Session) {
    let base = serve().await;
    let mut cfg = config();
    cfg.accessibility_tree = true;
    let pool = BrowserPool::launch(cfg).await.unwrap();
    let mut s = pool.lease().await.unwrap();
    s.act(&Action::Goto(format!("{base}{path}"))).await.unwrap();
    (pool, s)
}

/// The number of the observation's element labelled `label`.
pub fn number_of(obs: &browser_pool::Observation, label: &str) -> u32 {
    obs.elements
        .iter()
        .find(|e| e.label == label)
        .unwrap_or_else(|| panic!("no element {label:?}"))
        .id
}
