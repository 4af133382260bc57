//! At the door: what every request must pass before a handler sees it, and the headers
//! every response carries.
//!
//! Pages that agents visit are untrusted, and a browser lets any page send "simple"
//! cross-origin requests (a form post, `fetch` with `mode: 'no-cors'`) without asking the
//! server first. So a write (any method but GET, HEAD and OPTIONS) is refused when the
//! browser says it comes from another origin (`Sec-Fetch-Site`, `Origin`), and it must
//! declare a JSON content type, which no simple request can. Clients that are not browsers
//! send neither header and are unaffected, as long as they declare the content type.
//!
//! Parameters are checked here too: a NUL character (which Postgres refuses) or invalid
//! UTF-8 in a query or path parameter is a 400 naming it, never a 500 from the database.

use axum::extract::{FromRequestParts, RawPathParams, Request};
use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use axum::http::{Method, request::Parts};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, field};

/// The dashboard's policy: scripts, styles and images from this server only, nothing
/// inline, never framed.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self'; connect-src 'self'; object-src 'none'; \
     base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The route that takes JSON Lines.
const IMPORT_PATH: &str = "/api/tasks/import";
/// Content types a write may declare.
const JSON: &[&str] = &["application/json"];
/// Content types the task import may declare: JSON Lines, or JSON.
const IMPORT_TYPES: &[&str] = &[
    "application/x-ndjson",
    "application/jsonl",
    "application/json",
];

/// The middleware for every route: refuses cross-origin writes, writes without a JSON
/// content type and NULs in query parameters, and adds the security headers.
pub async fn guard(req: Request, next: Next) -> Response {
    let checked = origin_allowed(&req)
        .and_then(|()| content_type_allowed(&req))
        .and_then(|()| query_clean(req.uri().query()));
    let mut resp = match checked {
        Ok(()) => next.run(req).await,
        Err(e) => e.into_response(),
    };
    security_headers(resp.headers_mut());
    resp
}

/// The route layer: path parameters without NULs and in UTF-8, and no query parameters
/// on a route that takes none (both known only once routed).
pub async fn path_params(req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    if let Err(e) = path_params_clean(&mut parts).await {
        return e.into_response();
    }
    if let Err(e) = query_expected(&parts) {
        return e.into_response();
    }
    next.run(Request::from_parts(parts, body)).await
}

/// The routes that take query parameters (each checks its own names); on any other a
/// parameter is a typo or a misunderstanding, refused rather than ignored.
const TAKE_QUERIES: &[(Method, &str)] = &[
    (Method::GET, "/api/tasks"),
    (Method::POST, "/api/tasks/import"),
    (Method::GET, "/api/campaigns"),
    (Method::GET, "/api/campaigns/{id}/export"),
    (Method::GET, "/api/episodes"),
    (Method::GET, "/api/training-runs"),
    (Method::GET, "/api/triage"),
    (Method::POST, "/api/recordings/import"),
    (Method::GET, "/api/recordings/{id}/har"),
    (Method::GET, "/api/campaigns/{id}/analysis"),
    (Method::GET, "/api/campaigns/{id}/episodes"),
    (Method::GET, "/api/campaigns/{id}/plots"),
    (Method::GET, "/api/compare"),
    (Method::GET, "/openenv/state"),
];

fn query_expected(parts: &Parts) -> Result<(), ApiError> {
    let Some(query) = parts.uri.query().filter(|q| !q.is_empty()) else {
        return Ok(());
    };
    let route = parts
        .extensions
        .get::<axum::extract::MatchedPath>()
        .map(|m| m.as_str());
    let takes = route.is_some_and(|r| {
        TAKE_QUERIES
            .iter()
            .any(|(m, p)| *m == parts.method && *p == r)
    });
    if takes || route.is_none() {
        return Ok(());
    }
    let first = query.split('&').next().unwrap_or_default();
    let name =
        String::from_utf8_lossy(&decode(first.split('=').next().unwrap_or_default())).into_owned();
    Err(field(
        &name,
        "is not a parameter of this endpoint (it takes no query parameters)",
    ))
}

fn is_write(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

fn origin_allowed(req: &Request) -> Result<(), ApiError> {
    // A WebSocket upgrade is a GET that writes (browsers open sockets to any origin, and
    // pages that agents visit run on this machine): checked like a write.
    let upgrade = req
        .headers()
        .get(header::UPGRADE)
        .is_some_and(|u| u.as_bytes().eq_ignore_ascii_case(b"websocket"));
    if !is_write(req.method()) && !upgrade {
        return Ok(());
    }
    let headers = req.headers();
    // `same-site` is refused too: a page on another port of this host is same-site.
    if let Some(site) = headers.get("sec-fetch-site") {
        let site = site.to_str().unwrap_or("?");
        if !matches!(site, "same-origin" | "none") {
            return Err(ApiError::Forbidden(format!(
                "cross-origin write refused (Sec-Fetch-Site: {site}): the API accepts writes \
                 only from its own pages and from clients that are not browsers"
            )));
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .or_else(|| req.uri().authority().map(|a| a.as_str()));
        let origin = origin.to_str().unwrap_or("?");
        if !same_origin(origin, host) {
            return Err(ApiError::Forbidden(format!(
                "cross-origin write refused: Origin `{origin}` is not this server ({})",
                host.unwrap_or("no Host header")
            )));
        }
    }
    Ok(())
}

/// Whether `origin` (`scheme://host[:port]`) names the server at `host` (`host[:port]`,
/// the port defaulting to the scheme's).
fn same_origin(origin: &str, host: Option<&str>) -> bool {
    let Some(host) = host else { return false };
    let Some((scheme, authority)) = origin.split_once("://") else {
        // `null` (sandboxed frames, local files) and anything malformed.
        return false;
    };
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443,
        _ => return false,
    };
    let split = |a: &str| -> Option<(String, u16)> {
        // An IPv6 literal keeps its colons inside brackets.
        let (name, port) = match a.rfind(':') {
            Some(i) if !a[i..].contains(']') => (&a[..i], a[i + 1..].parse().ok()?),
            _ => (a, default_port),
        };
        Some((name.to_ascii_lowercase(), port))
    };
    matches!((split(authority), split(host)), (Some(o), Some(h)) if o == h)
}

fn content_type_allowed(req: &Request) -> Result<(), ApiError> {
    if !is_write(req.method()) {
        return Ok(());
    }
    let allowed = if req.uri().path() == IMPORT_PATH {
        IMPORT_TYPES
    } else {
        JSON
    };
    let declared = req
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap_or("?"));
    let essence = declared.map(|d| {
        d.split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase()
    });
    if essence.is_some_and(|e| allowed.contains(&e.as_str())) {
        return Ok(());
    }
    Err(ApiError::UnsupportedMediaType(format!(
        "{}: a write to {} must declare Content-Type {} (body-less actions too, with an \
         empty body or `{{}}`)",
        match declared {
            Some(d) => format!("Content-Type `{d}` is not accepted"),
            None => "no Content-Type".to_string(),
        },
        req.uri().path(),
        allowed.join(" or ")
    )))
}

/// Percent-decodes a query component (`+` is a space), bytes as they are.
fn decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match b[i] {
            b'%' if i + 2 < b.len() => match (hex(b[i + 1]), hex(b[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    out
}

fn query_clean(query: Option<&str>) -> Result<(), ApiError> {
    for pair in query.unwrap_or_default().split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let name = String::from_utf8_lossy(&decode(key)).replace('\0', "\\0");
        for part in [decode(key), decode(value)] {
            if part.contains(&0) {
                return Err(field(&name, "contains a NUL character"));
            }
            if std::str::from_utf8(&part).is_err() {
                return Err(field(&name, "is not valid UTF-8"));
            }
        }
    }
    Ok(())
}

async fn path_params_clean(parts: &mut Parts) -> Result<(), ApiError> {
    use axum::extract::rejection::RawPathParamsRejection;
    match RawPathParams::from_request_parts(parts, &()).await {
        Ok(params) => {
            for (name, value) in &params {
                if value.contains('\0') {
                    return Err(field(name, "contains a NUL character"));
                }
            }
            Ok(())
        }
        Err(RawPathParamsRejection::InvalidUtf8InPathParam(e)) => {
            // "Invalid UTF-8 in `id`": the key is in backticks.
            let text = e.body_text();
            let name = text.split('`').nth(1).unwrap_or("path");
            Err(field(name, "is not valid UTF-8"))
        }
        // A route without parameters.
        Err(_) => Ok(()),
    }
}

fn security_headers(headers: &mut HeaderMap) {
    let set = |headers: &mut HeaderMap, name: HeaderName, value: &'static str| {
        headers
            .entry(name)
            .or_insert(HeaderValue::from_static(value));
    };
    set(
        headers,
        header::CONTENT_SECURITY_POLICY,
        CONTENT_SECURITY_POLICY,
    );
    set(headers, header::X_FRAME_OPTIONS, "DENY");
    set(headers, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(headers, header::REFERRER_POLICY, "no-referrer");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_match_their_host_only() {
        assert!(same_origin("http://127.0.0.1:8080", Some("127.0.0.1:8080")));
        assert!(same_origin("http://LocalHost", Some("localhost:80")));
        assert!(same_origin("https://gym.example", Some("gym.example")));
        assert!(same_origin("http://[::1]:8080", Some("[::1]:8080")));
        assert!(!same_origin(
            "http://127.0.0.1:8701",
            Some("127.0.0.1:8080")
        ));
        assert!(!same_origin("http://evil.example", Some("127.0.0.1:8080")));
        assert!(!same_origin("null", Some("127.0.0.1:8080")));
        assert!(!same_origin("http://127.0.0.1:8080", None));
        assert!(!same_origin("https://gym.example", Some("gym.example:80")));
    }

    #[test]
    fn nul_and_bad_utf8_in_queries_name_the_parameter() {
        assert!(query_clean(Some("site=shop&limit=5")).is_ok());
        assert!(query_clean(Some("q=%2500")).is_ok());
        let name = |q: &str| match query_clean(Some(q)) {
            Err(ApiError::Invalid(f)) => f[0].field.clone(),
            other => panic!("{q}: {other:?}"),
        };
        assert_eq!(name("site=a%00b"), "site");
        assert_eq!(name("limit=5&tag=%00"), "tag");
        assert_eq!(name("site=%ff"), "site");
        assert_eq!(name("a%00=1"), "a\\0");
        assert_eq!(decode("a+b%41%4"), b"a bA%4");
    }
}
