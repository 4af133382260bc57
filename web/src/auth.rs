//! Who may call what: API tokens (`Authorization: Bearer <token>`, or the dashboard's
//! sign-in cookie) and the scope each route needs.
//!
//! Which routes need a token depends on where the server listens ([`Access`]): beyond
//! loopback every route does; on loopback reads are open (the machine's own user) and
//! writes are not, because pages that agents visit run on this machine too; `--no-auth`
//! opens everything on loopback. Token management needs `admin` whatever the mode but
//! the open one. What stays open in every mode holds no data: the health check, the
//! dashboard's static files and its sign-in.

use std::net::IpAddr;

use axum::extract::{Request, State};
use axum::http::header::{self, HeaderMap};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use store::{Scope, Store, TokenView};

use crate::error::ApiError;

/// The dashboard's sign-in cookie (it holds the token itself: revoking the token signs
/// the browser out).
pub const COOKIE: &str = "surfgym_session";

/// Which requests need a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// None (`surfgym serve --no-auth`, loopback only): the local opt-out.
    Open,
    /// Writes and token management (the server listens on loopback).
    Writes,
    /// Every route but the health check, the dashboard's files and its sign-in (the
    /// server listens beyond loopback).
    Everything,
}

impl Access {
    /// The mode for a server bound to `ip`; `no_auth` is refused beyond loopback.
    pub fn for_bind(ip: IpAddr, no_auth: bool) -> Result<Access, String> {
        match (ip.is_loopback(), no_auth) {
            (true, true) => Ok(Access::Open),
            (true, false) => Ok(Access::Writes),
            (false, false) => Ok(Access::Everything),
            (false, true) => Err(format!(
                "--no-auth is refused with --bind {ip}: anyone who reaches the port could \
                 read and change everything; it is for loopback (127.0.0.1) only"
            )),
        }
    }

    /// The mode's name, as `GET /api/session` reports it.
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Open => "open",
            Access::Writes => "writes",
            Access::Everything => "everything",
        }
    }
}

/// What the auth middleware needs.
#[derive(Clone)]
pub struct Gate {
    /// Where tokens are.
    pub store: Store,
    /// The mode.
    pub access: Access,
}

/// The caller a request was authenticated as (`None`: no credentials were needed or
/// given), for the handlers that care (`/api/session`).
#[derive(Debug, Clone)]
pub struct Caller(pub Option<TokenView>);

/// What a route needs: nothing, a token of a scope, or (the dashboard page) a token or a
/// redirect to the sign-in page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    Nothing,
    Scope(Scope),
    Page,
}

fn is_write(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Routes without data: always open.
fn exempt(path: &str) -> bool {
    path == "/api/health"
        || path == "/api/session"
        || path == "/signin"
        || path.starts_with("/assets/")
}

fn need(access: Access, method: &Method, path: &str) -> Need {
    if access == Access::Open || exempt(path) {
        return Need::Nothing;
    }
    if path == "/api/tokens" || path.starts_with("/api/tokens/") {
        return Need::Scope(Scope::Admin);
    }
    // A WebSocket session opens and steps environment sessions: a write, though the
    // upgrade is a GET.
    if is_write(method) || path == crate::sessions::openenv::WS_PATH {
        return Need::Scope(Scope::Write);
    }
    match (access, path) {
        // The dashboard's pages: a browser without a session is sent to sign in.
        (Access::Everything, p)
            if p == "/"
                || p == "/training-runs"
                || p.starts_with("/training-runs/")
                || crate::analysis::is_page(p) =>
        {
            Need::Page
        }
        (Access::Everything, _) => Need::Scope(Scope::Read),
        _ => Need::Nothing,
    }
}

/// The request's token: the `Authorization` header's, else the sign-in cookie's. A
/// header that is not `Bearer` is an error, not an absence.
fn presented(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    if let Some(value) = headers.get(header::AUTHORIZATION) {
        let value = value.to_str().unwrap_or_default().trim();
        let token = value
            .split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, t)| t.trim())
            .filter(|t| !t.is_empty());
        return match token {
            Some(t) => Ok(Some(t.to_string())),
            None => Err(ApiError::Unauthorized(
                "the Authorization header must be `Bearer <token>`".into(),
            )),
        };
    }
    Ok(cookie(headers, COOKIE))
}

/// A cookie's value.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

fn create_hint(scope: Scope) -> String {
    format!("create one with `surfgym token create --scope {scope}`")
}

/// The middleware: refuses a request whose route needs a token it lacks (401) or whose
/// token's scope is too low (403); otherwise passes it on with its [`Caller`].
pub async fn require(State(gate): State<Gate>, mut req: Request, next: Next) -> Response {
    let need = need(gate.access, req.method(), req.uri().path());
    let caller = match check(&gate, need, req.headers()).await {
        Ok(caller) => caller,
        Err(_) if need == Need::Page => return Redirect::to("/signin").into_response(),
        Err(e) => return e.into_response(),
    };
    req.extensions_mut().insert(Caller(caller));
    req.extensions_mut().insert(gate.access);
    next.run(req).await
}

async fn check(
    gate: &Gate,
    need: Need,
    headers: &HeaderMap,
) -> Result<Option<TokenView>, ApiError> {
    if gate.access == Access::Open {
        return Ok(None);
    }
    let wanted = match need {
        Need::Scope(s) => s,
        Need::Page => Scope::Read,
        // Credentials on an open route are still looked at (the dashboard asks who it is
        // signed in as), but a bad one is no reason to refuse.
        Need::Nothing => {
            let token = presented(headers).ok().flatten();
            return Ok(match token {
                Some(t) => gate.store.authenticate_token(&t).await.ok().flatten(),
                None => None,
            });
        }
    };
    let Some(secret) = presented(headers)? else {
        return Err(ApiError::Unauthorized(format!(
            "this request needs an API token with scope `{wanted}` (or higher), sent as \
             `Authorization: Bearer <token>` or by signing in to the dashboard at /signin: \
             {}",
            create_hint(wanted)
        )));
    };
    let token = gate
        .store
        .authenticate_token(&secret)
        .await
        .map_err(ApiError::from)?
        .ok_or_else(|| {
            ApiError::Unauthorized(format!(
                "the API token is not valid (unknown, mistyped or revoked): {}",
                create_hint(wanted)
            ))
        })?;
    if token.scope < wanted {
        return Err(ApiError::InsufficientScope {
            needed: wanted,
            message: format!(
                "this request needs scope `{wanted}`; the token {} ({}) has scope `{}`: {}",
                token.prefix,
                if token.name.is_empty() {
                    "unnamed"
                } else {
                    &token.name
                },
                token.scope,
                create_hint(wanted)
            ),
        });
    }
    Ok(Some(token))
}

/// The `WWW-Authenticate` value of a refusal (RFC 6750).
pub fn challenge(status: StatusCode, needed: Option<Scope>) -> String {
    match (status, needed) {
        (StatusCode::FORBIDDEN, Some(s)) => {
            format!("Bearer realm=\"surfgym\", error=\"insufficient_scope\", scope=\"{s}\"")
        }
        _ => "Bearer realm=\"surfgym\"".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_need_what_the_mode_says() {
        use Access::*;
        let get = Method::GET;
        let post = Method::POST;
        assert_eq!(need(Open, &post, "/api/tokens"), Need::Nothing);
        assert_eq!(need(Writes, &get, "/api/tasks"), Need::Nothing);
        assert_eq!(need(Writes, &post, "/api/tasks"), Need::Scope(Scope::Write));
        assert_eq!(need(Writes, &get, "/api/tokens"), Need::Scope(Scope::Admin));
        assert_eq!(
            need(Writes, &Method::DELETE, "/api/tokens/x"),
            Need::Scope(Scope::Admin)
        );
        assert_eq!(need(Everything, &get, "/metrics"), Need::Scope(Scope::Read));
        assert_eq!(need(Everything, &get, "/"), Need::Page);
        assert_eq!(need(Everything, &get, "/api/health"), Need::Nothing);
        assert_eq!(need(Everything, &post, "/api/session"), Need::Nothing);
        assert_eq!(need(Everything, &get, "/assets/app.js"), Need::Nothing);
    }

    #[test]
    fn bearer_header_then_cookie() {
        let mut h = HeaderMap::new();
        assert_eq!(presented(&h).unwrap(), None);
        h.insert(
            header::COOKIE,
            "a=1; surfgym_session=sgt_c".parse().unwrap(),
        );
        assert_eq!(presented(&h).unwrap().as_deref(), Some("sgt_c"));
        h.insert(header::AUTHORIZATION, "bearer  sgt_h ".parse().unwrap());
        assert_eq!(presented(&h).unwrap().as_deref(), Some("sgt_h"));
        h.insert(header::AUTHORIZATION, "Basic dTpw".parse().unwrap());
        assert!(presented(&h).is_err());
    }

    #[test]
    fn no_auth_only_on_loopback() {
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let any: IpAddr = "0.0.0.0".parse().unwrap();
        assert_eq!(Access::for_bind(lo, true), Ok(Access::Open));
        assert_eq!(Access::for_bind(lo, false), Ok(Access::Writes));
        assert_eq!(Access::for_bind(any, false), Ok(Access::Everything));
        assert!(
            Access::for_bind(any, true)
                .unwrap_err()
                .contains("loopback")
        );
    }
}
