//! API tokens and the dashboard's sign-in, through the real router (no socket) over a
//! real, freshly migrated Postgres database per test: which routes need which scope in
//! each mode, 401 / 403 with what to do, revocation, the sign-in cookie, and the loopback
//! opt-out.

// The root package's test set-up: one copy for every crate's end-to-end tests.
use crate::common;
use crate::support;

use axum::http::{Method, StatusCode};
use policy::PolicyRegistry;
use serde_json::{Value, json};
use sqlx::PgPool;
use store::{Scope, Store};
use web::Access;

use support::{send, task};

pub fn app_with(pool: PgPool, access: Access) -> axum::Router {
    let engine = common::new_engine(pool, PolicyRegistry::builtin());
    web::router_with(web::AppState { engine }, access)
}

/// A token of each scope, and a revoked write token.
pub struct Tokens {
    pub read: String,
    pub write: String,
    pub admin: String,
    pub revoked: String,
}

pub async fn tokens(pool: &PgPool) -> Tokens {
    let store = Store::from_pool(pool.clone());
    let make = |scope| {
        let store = store.clone();
        async move { store.create_token(scope, "test").await.unwrap().1 }
    };
    let revoked = make(Scope::Write).await;
    let id = store
        .authenticate_token(&revoked)
        .await
        .unwrap()
        .unwrap()
        .id;
    store.revoke_token(&id.to_string()).await.unwrap().unwrap();
    Tokens {
        read: make(Scope::Read).await,
        write: make(Scope::Write).await,
        admin: make(Scope::Admin).await,
        revoked,
    }
}

/// What a write could change: row counts, campaign statuses, revocations.
pub async fn stored(pool: &PgPool) -> Value {
    let row: (i64, i64, i64, i64, i64, Option<String>) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM tasks), (SELECT count(*) FROM campaigns), \
         (SELECT count(*) FROM episodes), (SELECT count(*) FROM api_tokens), \
         (SELECT count(*) FROM api_tokens WHERE revoked_at IS NOT NULL), \
         (SELECT string_agg(id::text || status, ',' ORDER BY id) FROM campaigns)",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    json!([row.0, row.1, row.2, row.3, row.4, row.5])
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// A JSON request with an optional token.
async fn req(
    app: &axum::Router,
    method: Method,
    uri: &str,
    token: Option<&str>,
    body: &str,
) -> (StatusCode, axum::http::HeaderMap, Value) {
    let auth = token.map(bearer);
    let mut headers = vec![("content-type", "application/json")];
    if let Some(a) = &auth {
        headers.push(("authorization", a.as_str()));
    }
    send(app, method, uri, &headers, body).await
}

/// Tokens made through the API: created (secret shown once), listed (never the
/// secret), used, revoked; a revoked token authenticates nothing.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn tokens_are_created_listed_and_revoked_through_the_api(pool: PgPool) {
    let app = app_with(pool.clone(), Access::Everything);
    let t = tokens(&pool).await;
    let (s, _, made) = req(
        &app,
        Method::POST,
        "/api/tokens",
        Some(&t.admin),
        r#"{"scope": "write", "name": "ci"}"#,
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{made}");
    let secret = made["token"].as_str().unwrap().to_string();
    assert!(secret.starts_with("sgt_") && secret.len() > 40);
    assert!(secret.starts_with(made["prefix"].as_str().unwrap()));
    assert_eq!(made["scope"], "write");

    // Stored hashed: the row holds the secret's SHA-256, the secret itself nowhere.
    let (hashed, clear): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE hash = sha256(convert_to($1, 'UTF8'))), \
         count(*) FILTER (WHERE name = $1 OR prefix = $1) FROM api_tokens",
    )
    .bind(&secret)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!((hashed, clear), (1, 0));

    let (s, _, _) = req(
        &app,
        Method::POST,
        "/api/tasks",
        Some(&secret),
        &task("a", "shop").to_string(),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED);
    let (s, _, list) = req(&app, Method::GET, "/api/tokens", Some(&t.admin), "").await;
    assert_eq!(s, StatusCode::OK);
    assert!(
        !list.to_string().contains(&secret),
        "a listing never shows secrets"
    );
    let ci = list
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "ci")
        .unwrap()
        .clone();
    assert!(ci["last_used_at"].is_string(), "use is noted: {ci}");
    assert!(ci["revoked_at"].is_null());

    let id = ci["id"].as_str().unwrap();
    let (s, _, revoked) = req(
        &app,
        Method::DELETE,
        &format!("/api/tokens/{id}"),
        Some(&t.admin),
        "",
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    assert!(revoked["revoked_at"].is_string());
    let (s, h, e) = req(
        &app,
        Method::POST,
        "/api/tasks",
        Some(&secret),
        &task("b", "shop").to_string(),
    )
    .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED, "{e}");
    assert!(
        h["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Bearer")
    );
    assert!(e["error"]["message"].as_str().unwrap().contains("revoked"));
    let (s, _, _) = req(
        &app,
        Method::DELETE,
        "/api/tokens/sgt_nothing",
        Some(&t.admin),
        "",
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, _, e) = req(
        &app,
        Method::POST,
        "/api/tokens",
        Some(&t.admin),
        r#"{"scope": "root"}"#,
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(e["error"]["fields"][0]["field"], "scope");
}

/// Every route, without a token, with a revoked one and with too low a scope, in the
/// mode that serves beyond loopback: 401 / 403 naming what to do, and nothing stored.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn every_route_beyond_loopback_needs_a_token_of_its_scope(pool: PgPool) {
    let app = app_with(pool.clone(), Access::Everything);
    let t = tokens(&pool).await;
    let (s, _, c) = req(
        &app,
        Method::POST,
        "/api/tasks",
        Some(&t.write),
        &task("kept", "shop").to_string(),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{c}");
    let (s, _, c) = req(
        &app,
        Method::POST,
        "/api/campaigns",
        Some(&t.write),
        r#"{"policy": "random", "tasks": {"ids": ["kept"]}}"#,
    )
    .await;
    assert_eq!(s, StatusCode::ACCEPTED, "{c}");
    let campaign = c["id"].as_str().unwrap().to_string();
    let before = stored(&pool).await;

    let new_task = task("planted", "shop").to_string();
    let routes: Vec<(Method, String, String, Scope)> = vec![
        (
            Method::GET,
            "/api/policies".into(),
            String::new(),
            Scope::Read,
        ),
        (
            Method::GET,
            "/api/openapi.json".into(),
            String::new(),
            Scope::Read,
        ),
        (Method::GET, "/api/tasks".into(), String::new(), Scope::Read),
        (
            Method::GET,
            "/api/tasks/kept".into(),
            String::new(),
            Scope::Read,
        ),
        (
            Method::GET,
            "/api/campaigns".into(),
            String::new(),
            Scope::Read,
        ),
        (
            Method::GET,
            format!("/api/campaigns/{campaign}"),
            String::new(),
            Scope::Read,
        ),
        (
            Method::GET,
            format!("/api/campaigns/{campaign}/export"),
            String::new(),
            Scope::Read,
        ),
        (
            Method::GET,
            format!("/api/campaigns/{campaign}/policies"),
            String::new(),
            Scope::Read,
        ),
        (
            Method::GET,
            format!("/api/campaigns/{campaign}/events"),
            String::new(),
            Scope::Read,
        ),
        (
            Method::GET,
            "/api/campaigns/events".into(),
            String::new(),
            Scope::Read,
        ),
        (
            Method::GET,
            format!("/api/campaigns/{campaign}/analysis"),
            String::new(),
            Scope::Read,
        ),
        (
            Method::GET,
            format!("/api/campaigns/{campaign}/episodes"),
            String::new(),
            Scope::Read,
        ),
        (
            Method::GET,
            format!("/api/campaigns/{campaign}/plots"),
            String::new(),
            Scope::Read,
        ),
        (
            Method::GET,
            format!("/api/compare?a={campaign}&b={campaign}"),
            String::new(),
            Scope::Read,
        ),
        (
            Method::GET,
            "/api/triage".into(),
            String::new(),
            Scope::Read,
        ),
        (
            Method::GET,
            format!("/api/triage?campaign={campaign}"),
            String::new(),
            Scope::Read,
        ),
        (
            Method::GET,
            "/api/episodes".into(),
            String::new(),
            Scope::Read,
        ),
        (
            Method::GET,
            format!("/api/episodes/{}", uuid::Uuid::nil()),
            String::new(),
            Scope::Read,
        ),
        (
            Method::GET,
            format!("/api/blobs/{}", "0".repeat(64)),
            String::new(),
            Scope::Read,
        ),
        (Method::GET, "/metrics".into(), String::new(), Scope::Read),
        (
            Method::POST,
            "/api/tasks".into(),
            new_task.clone(),
            Scope::Write,
        ),
        (
            Method::POST,
            "/api/tasks/import".into(),
            new_task.clone(),
            Scope::Write,
        ),
        (
            Method::DELETE,
            "/api/tasks/kept".into(),
            String::new(),
            Scope::Write,
        ),
        (
            Method::POST,
            "/api/campaigns".into(),
            r#"{"policy": "random"}"#.into(),
            Scope::Write,
        ),
        (
            Method::POST,
            format!("/api/campaigns/{campaign}/pause"),
            String::new(),
            Scope::Write,
        ),
        (
            Method::POST,
            format!("/api/campaigns/{campaign}/resume"),
            String::new(),
            Scope::Write,
        ),
        (
            Method::POST,
            format!("/api/campaigns/{campaign}/cancel"),
            String::new(),
            Scope::Write,
        ),
        (
            Method::GET,
            "/api/tokens".into(),
            String::new(),
            Scope::Admin,
        ),
        (
            Method::POST,
            "/api/tokens".into(),
            r#"{"scope": "admin"}"#.into(),
            Scope::Admin,
        ),
        (
            Method::DELETE,
            "/api/tokens/sgt_".into(),
            String::new(),
            Scope::Admin,
        ),
    ];
    for (method, uri, body, scope) in &routes {
        let what = format!("{method} {uri}");
        for (token, label) in [
            (None, "no token"),
            (Some(t.revoked.as_str()), "revoked token"),
            (Some("sgt_made_up"), "unknown token"),
        ] {
            let (s, h, e) = req(&app, method.clone(), uri, token, body).await;
            assert_eq!(s, StatusCode::UNAUTHORIZED, "{what} with {label}: {e}");
            assert!(
                h["www-authenticate"]
                    .to_str()
                    .unwrap()
                    .starts_with("Bearer"),
                "{what}"
            );
            let msg = e["error"]["message"].as_str().unwrap();
            assert!(
                msg.contains(&format!("surfgym token create --scope {scope}")),
                "{what}: {msg}"
            );
            assert_eq!(e["error"]["type"], "unauthorized");
        }
        let lower = match scope {
            Scope::Read => None,
            Scope::Write => Some(&t.read),
            Scope::Admin => Some(&t.write),
        };
        if let Some(lower) = lower {
            let (s, h, e) = req(&app, method.clone(), uri, Some(lower), body).await;
            assert_eq!(s, StatusCode::FORBIDDEN, "{what} with a lower scope: {e}");
            assert_eq!(e["error"]["type"], "insufficient_scope");
            let msg = e["error"]["message"].as_str().unwrap();
            assert!(
                msg.contains(&format!("needs scope `{scope}`")),
                "{what}: {msg}"
            );
            let challenge = h["www-authenticate"].to_str().unwrap();
            assert!(
                challenge.contains(&format!("scope=\"{scope}\"")),
                "{challenge}"
            );
        }
        // A header that is not a bearer token is refused as such.
        let (s, _, e) = send(
            &app,
            method.clone(),
            uri,
            &[
                ("content-type", "application/json"),
                ("authorization", "Basic dTpw"),
            ],
            body,
        )
        .await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{what}: {e}");
    }
    assert_eq!(
        stored(&pool).await,
        before,
        "a refused request stored something"
    );

    // With the right scope each read goes through (the handler answers).
    for (method, uri, _, scope) in &routes {
        if *method == Method::GET && *scope == Scope::Read && !uri.ends_with("/events") {
            let (s, _, e) = req(&app, method.clone(), uri, Some(&t.read), "").await;
            assert!(
                s == StatusCode::OK || s == StatusCode::NOT_FOUND,
                "{uri}: {s} {e}"
            );
            assert_ne!(e["error"]["type"], "unauthorized");
        }
    }
    // What holds no data stays open.
    for uri in [
        "/api/health",
        "/signin",
        "/assets/app.js",
        "/assets/signin.js",
        "/api/session",
    ] {
        let (s, _, _) = send(&app, Method::GET, uri, &[], "").await;
        assert_eq!(s, StatusCode::OK, "{uri}");
    }
    // The dashboard sends a browser without a session to its sign-in page.
    let (s, h, _) = send(&app, Method::GET, "/", &[], "").await;
    assert!(s.is_redirection(), "{s}");
    assert_eq!(h["location"], "/signin");
}

/// On loopback reads are open and writes are not; `--no-auth` opens writes too.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn loopback_opens_reads_and_no_auth_opens_writes(pool: PgPool) {
    let t = tokens(&pool).await;
    let app = app_with(pool.clone(), Access::Writes);
    let (s, _, _) = req(&app, Method::GET, "/api/tasks", None, "").await;
    assert_eq!(s, StatusCode::OK);
    let (s, _, _) = send(&app, Method::GET, "/", &[], "").await;
    assert_eq!(s, StatusCode::OK);
    let before = stored(&pool).await;
    let body = task("a", "shop").to_string();
    let (s, _, e) = req(&app, Method::POST, "/api/tasks", None, &body).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED, "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("surfgym token create --scope write")
    );
    let (s, _, _) = req(&app, Method::POST, "/api/tasks", Some(&t.read), &body).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, _, _) = req(&app, Method::GET, "/api/tokens", None, "").await;
    assert_eq!(
        s,
        StatusCode::UNAUTHORIZED,
        "token admin needs admin on loopback too"
    );
    assert_eq!(stored(&pool).await, before);
    let (s, _, _) = req(&app, Method::POST, "/api/tasks", Some(&t.write), &body).await;
    assert_eq!(s, StatusCode::CREATED);

    let open = app_with(pool.clone(), Access::Open);
    let (s, _, e) = req(
        &open,
        Method::POST,
        "/api/tasks",
        None,
        &task("b", "shop").to_string(),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{e}");
    let (_, _, session) = req(&open, Method::GET, "/api/session", None, "").await;
    assert_eq!(session["access"], "open");
    // The door still stands without authentication: a cross-origin write is refused.
    let (s, _, _) = send(
        &open,
        Method::POST,
        "/api/tasks",
        &[
            ("content-type", "application/json"),
            ("host", "127.0.0.1:8080"),
            ("origin", "http://evil.example"),
        ],
        &task("c", "shop").to_string(),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
}

/// The dashboard's sign-in: a valid token becomes an `HttpOnly`, `SameSite=Strict` cookie
/// (`Secure` beyond loopback) that authenticates the dashboard's requests; a bad one is a
/// 401 and sets nothing; signing out clears it; revoking the token ends the session.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn the_dashboard_signs_in_with_a_cookie(pool: PgPool) {
    let t = tokens(&pool).await;
    for access in [Access::Everything, Access::Writes] {
        let app = app_with(pool.clone(), access);
        let json = ("content-type", "application/json");
        let (s, h, e) = send(
            &app,
            Method::POST,
            "/api/session",
            &[json],
            r#"{"token": "sgt_wrong"}"#,
        )
        .await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{e}");
        assert!(h.get("set-cookie").is_none());
        let (s, _, e) = send(
            &app,
            Method::POST,
            "/api/session",
            &[json],
            r#"{"token": "x", "user": "me"}"#,
        )
        .await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "unknown field: {e}");

        let body = json!({"token": t.write}).to_string();
        let (s, h, who) = send(&app, Method::POST, "/api/session", &[json], &body).await;
        assert_eq!(s, StatusCode::OK, "{who}");
        assert_eq!(who["token"]["scope"], "write");
        let set = h["set-cookie"].to_str().unwrap().to_string();
        for part in [
            "surfgym_session=sgt_",
            "HttpOnly",
            "SameSite=Strict",
            "Path=/",
        ] {
            assert!(set.contains(part), "{set}");
        }
        assert_eq!(
            set.contains("Secure"),
            access == Access::Everything,
            "{set}"
        );
        let cookie = set.split(';').next().unwrap().to_string();
        let with_cookie = [json, ("cookie", cookie.as_str())];

        let (s, _, who) = send(&app, Method::GET, "/api/session", &with_cookie, "").await;
        assert_eq!(s, StatusCode::OK);
        assert_eq!(who["token"]["scope"], "write");
        let (s, _, _) = send(&app, Method::GET, "/", &with_cookie, "").await;
        assert_eq!(s, StatusCode::OK, "the signed-in dashboard is served");
        let name = format!("cookie-{}", access.as_str());
        let (s, _, e) = send(
            &app,
            Method::POST,
            "/api/tasks",
            &with_cookie,
            &task(&name, "shop").to_string(),
        )
        .await;
        assert_eq!(
            s,
            StatusCode::CREATED,
            "the cookie authenticates writes: {e}"
        );

        let (s, h, _) = send(&app, Method::DELETE, "/api/session", &with_cookie, "").await;
        assert_eq!(s, StatusCode::OK);
        let cleared = h["set-cookie"].to_str().unwrap();
        assert!(
            cleared.starts_with("surfgym_session=;") && cleared.contains("Max-Age=0"),
            "{cleared}"
        );
    }
    // Revoking the token signs every browser that used it out.
    let app = app_with(pool.clone(), Access::Everything);
    let store = Store::from_pool(pool.clone());
    let (view, secret) = store.create_token(Scope::Read, "browser").await.unwrap();
    let cookie = format!("surfgym_session={secret}");
    let (s, _, _) = send(&app, Method::GET, "/api/tasks", &[("cookie", &cookie)], "").await;
    assert_eq!(s, StatusCode::OK);
    store.revoke_token(&view.id.to_string()).await.unwrap();
    let (s, _, _) = send(&app, Method::GET, "/api/tasks", &[("cookie", &cookie)], "").await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
}
