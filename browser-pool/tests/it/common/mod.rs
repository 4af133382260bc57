//! A tiny HTTP server on loopback for the browser-pool tests: fixed routes, nothing else.

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One fixed response.
pub struct Route {
    /// Path without the query string.
    pub path: &'static str,
    /// The status line's code and reason.
    pub status: &'static str,
    /// `Content-Type` (charset added for text).
    pub content_type: &'static str,
    /// Extra header lines, each ending in `\r\n`.
    pub headers: &'static str,
    /// The body.
    pub body: String,
    /// How long the server waits before it answers (a slow server).
    pub delay: std::time::Duration,
}

/// An HTML page at `path`.
pub fn html(path: &'static str, body: impl Into<String>) -> Route {
    Route {
        path,
        status: "200 OK",
        content_type: "text/html",
        headers: "",
        body: body.into(),
        delay: std::time::Duration::ZERO,
    }
}

/// A redirect from `path` to `to` that takes the server `delay` to answer.
pub fn redirect(path: &'static str, to: &'static str, delay: std::time::Duration) -> Route {
    Route {
        status: "302 Found",
        // Routes live as long as the test's server.
        headers: Box::leak(format!("Location: {to}\r\n").into_boxed_str()),
        delay,
        ..html(path, "")
    }
}

/// Serves `routes` (404 for anything else) and returns the base URL.
pub async fn serve(routes: Vec<Route>) -> String {
    serve_logged(routes).await.0
}

/// What the server was asked for: request paths with their query strings, in order.
pub type RequestLog = Arc<std::sync::Mutex<Vec<String>>>;

/// [`serve`], also returning the log of the requests it gets.
pub async fn serve_logged(routes: Vec<Route>) -> (String, RequestLog) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let routes = Arc::new(routes);
    let log = RequestLog::default();
    let requests = log.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let routes = routes.clone();
            let requests = requests.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let req = String::from_utf8_lossy(&buf[..n]);
                let path = req.split_whitespace().nth(1).unwrap_or("/");
                requests.lock().unwrap().push(path.to_string());
                let path = path.split('?').next().unwrap_or("/");
                let route = routes.iter().find(|r| r.path == path);
                if let Some(r) = route {
                    tokio::time::sleep(r.delay).await;
                }
                let (status, kind, headers, body) = match route {
                    Some(r) => (r.status, r.content_type, r.headers, r.body.as_str()),
                    None => ("404 Not Found", "text/html", "", "<h1>not found</h1>"),
                };
                let resp = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: {kind}; charset=utf-8\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
            });
        }
    });
    (format!("http://{addr}"), log)
}
