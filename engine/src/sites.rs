//! Serves the bundled practice websites on loopback, each site on its own port (its own
//! origin, so cookies and storage behave as on separate websites).

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// The running site servers.
pub struct SitesServer {
    bases: BTreeMap<String, String>,
    tasks: Vec<JoinHandle<()>>,
}

impl SitesServer {
    /// Starts one server per bundled site on `host`. With `first_port`, site i asks for
    /// `first_port + i` and falls back to a free port when that one is taken.
    pub async fn start(host: IpAddr, first_port: Option<u16>) -> std::io::Result<SitesServer> {
        let mut bases = BTreeMap::new();
        let mut tasks = Vec::new();
        for (i, site) in tasks::site_names().into_iter().enumerate() {
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
            bases.insert(site.to_string(), format!("http://{addr}"));
            let app = Router::new().fallback(serve_file).with_state(site);
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
