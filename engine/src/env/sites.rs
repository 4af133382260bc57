//! Serves the bundled practice websites on loopback, each site on its own port (its own
//! origin, so cookies and storage behave as on separate websites).

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tower_http::services::ServeDir;

/// The running site servers.
pub struct SitesServer {
    bases: BTreeMap<String, String>,
    tasks: Vec<JoinHandle<()>>,
}

impl SitesServer {
    /// Starts one server per bundled site on `host`. With `first_port`, site i asks for
    /// `first_port + i` and falls back to a free port when that one is taken.
    pub async fn start(host: IpAddr, first_port: Option<u16>) -> std::io::Result<SitesServer> {
        SitesServer::start_with(host, first_port, Vec::new()).await
    }

    /// Like [`SitesServer::start`], plus directories served as further sites (`extra`:
    /// name and directory; MiniWoB++'s HTML, for one), after the bundled ones.
    pub async fn start_with(
        host: IpAddr,
        first_port: Option<u16>,
        extra: Vec<(String, PathBuf)>,
    ) -> std::io::Result<SitesServer> {
        let mut bases = BTreeMap::new();
        let mut tasks = Vec::new();
        let bundled = tasks::site_names();
        let all = bundled
            .iter()
            .map(|s| (s.to_string(), None))
            .chain(extra.into_iter().map(|(n, d)| (n, Some(d))));
        for (i, (site, dir)) in all.enumerate() {
            let wanted = first_port.map(|p| p.saturating_add(i as u16)).unwrap_or(0);
            let listener = match TcpListener::bind(SocketAddr::new(host, wanted)).await {
                Ok(l) => l,
                Err(e) if wanted != 0 => {
                    tracing::warn!(site, port = wanted, error = %e, "port taken; using a free one");
                    TcpListener::bind(SocketAddr::new(host, 0)).await?
                }
                Err(e) => return Err(e),
            };
            let addr = listener.local_addr()?;
            bases.insert(site.clone(), format!("http://{addr}"));
            let app = match dir {
                // MiniWoB++'s pages declare no charset: say UTF-8, or Chromium reads them
                // as Windows-1252 and garbles text such as unicode-test's symbols.
                Some(dir) => Router::new()
                    .fallback_service(ServeDir::new(dir))
                    .layer(axum::middleware::map_response(utf8_html)),
                None => {
                    let name: &'static str = bundled
                        .iter()
                        .find(|b| **b == site)
                        .copied()
                        .unwrap_or_default();
                    Router::new().fallback(serve_file).with_state(name)
                }
            };
            tasks.push(tokio::spawn(async move {
                if let Err(e) = axum::serve(listener, app).await {
                    tracing::error!(site, error = %e, "practice site server stopped");
                }
            }));
        }
        Ok(SitesServer { bases, tasks })
    }

    /// Base URL of each site (`shop` → `http://127.0.0.1:8701`).
    pub fn bases(&self) -> &BTreeMap<String, String> {
        &self.bases
    }
}

impl Drop for SitesServer {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

async fn utf8_html(mut resp: Response) -> Response {
    let html = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html") && !v.contains("charset"));
    if html {
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("text/html; charset=utf-8"),
        );
    }
    resp
}

async fn serve_file(State(site): State<&'static str>, uri: Uri) -> Response {
    match tasks::site_file(site, uri.path()) {
        Some(f) => ([(header::CONTENT_TYPE, f.mime)], f.bytes).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            "<!doctype html><title>Not found</title><h1>404 — page not found</h1><p><a href=\"/\">Home</a></p>",
        )
            .into_response(),
    }
}

/// MiniWoB++'s HTML directory (served as the `miniwob` site): `$SURFGYM_MINIWOB_DIR`, else
/// the `miniwob` wheel in the project's Python venv (`scripts/setup-python.sh` installs it).
pub fn find_miniwob(data_dir: &Path) -> Option<PathBuf> {
    let valid = |d: &Path| d.join("core/core.js").exists() && d.join("miniwob").is_dir();
    if let Some(d) = std::env::var_os("SURFGYM_MINIWOB_DIR").map(PathBuf::from) {
        return valid(&d).then_some(d);
    }
    let lib = data_dir.join("venv/lib");
    std::fs::read_dir(lib)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path().join("site-packages/miniwob/html"))
        .find(|d| valid(d))
}

/// The MiniWoB++ task names in its HTML directory (`click-button`, ...), sorted.
pub fn miniwob_task_names(html_dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(html_dir.join("miniwob"))
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter_map(|e| {
                    e.file_name()
                        .to_str()
                        .and_then(|n| n.strip_suffix(".html"))
                        .map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}
