//! The API table: every route × every kind of bad request (bad id, NUL in the path or the
//! query, oversized body, wrong content type, unknown field, missing token, wrong scope)
//! gets the documented 4xx (docs/reference/api.md, "Errors by request"), and nothing is stored:
//! rows are counted before and after. Served as beyond loopback (every route needs a
//! token), through the real router over a real, freshly migrated Postgres database.

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

/// One route as the table exercises it.
struct Route {
    method: Method,
    /// The path, `{id}` standing for its parameter.
    path: &'static str,
    /// A bad value for `{id}` and the status it gets.
    bad_id: Option<(&'static str, StatusCode)>,
    /// A valid JSON body (writes that take one).
    body: Option<Value>,
    /// The body limit, when the route reads a body.
    limit: Option<usize>,
    scope: Scope,
}

fn routes() -> Vec<Route> {
    let r = |method: Method, path: &'static str, scope: Scope| Route {
        method,
        path,
        bad_id: None,
        body: None,
        limit: None,
        scope,
    };
    let not_uuid = Some(("not-a-uuid", StatusCode::BAD_REQUEST));
    let missing = Some(("no-such-thing", StatusCode::NOT_FOUND));
    let json_limit = Some(web::JSON_LIMIT);
    vec![
        r(Method::GET, "/api/policies", Scope::Read),
        r(Method::GET, "/api/openapi.json", Scope::Read),
        Route {
            ..r(Method::GET, "/api/tasks", Scope::Read)
        },
        Route {
            bad_id: missing,
            ..r(Method::GET, "/api/tasks/{id}", Scope::Read)
        },
        Route {
            ..r(Method::GET, "/api/campaigns", Scope::Read)
        },
        Route {
            bad_id: not_uuid,
            ..r(Method::GET, "/api/campaigns/{id}", Scope::Read)
        },
        Route {
            bad_id: not_uuid,
            ..r(Method::GET, "/api/campaigns/{id}/export", Scope::Read)
        },
        Route {
            bad_id: not_uuid,
            ..r(Method::GET, "/api/campaigns/{id}/policies", Scope::Read)
        },
        Route {
            bad_id: not_uuid,
            ..r(Method::GET, "/api/campaigns/{id}/events", Scope::Read)
        },
        Route {
            bad_id: not_uuid,
            ..r(Method::GET, "/api/campaigns/{id}/analysis", Scope::Read)
        },
        Route {
            bad_id: not_uuid,
            ..r(Method::GET, "/api/campaigns/{id}/episodes", Scope::Read)
        },
        Route {
            bad_id: not_uuid,
            ..r(Method::GET, "/api/campaigns/{id}/plots", Scope::Read)
        },
        r(Method::GET, "/api/compare", Scope::Read),
        r(Method::GET, "/api/triage", Scope::Read),
        r(Method::GET, "/api/campaigns/events", Scope::Read),
        Route {
            ..r(Method::GET, "/api/episodes", Scope::Read)
        },
        Route {
            bad_id: not_uuid,
            ..r(Method::GET, "/api/episodes/{id}", Scope::Read)
        },
        Route {
            bad_id: Some(("xyz", StatusCode::BAD_REQUEST)),
            ..r(Method::GET, "/api/blobs/{id}", Scope::Read)
        },
        r(Method::GET, "/metrics", Scope::Read),
        Route {
            body: Some(task("new", "shop")),
            limit: json_limit,
            ..r(Method::POST, "/api/tasks", Scope::Write)
        },
        Route {
            body: Some(task("imported", "shop")),
            limit: Some(web::IMPORT_LIMIT),
            ..r(Method::POST, "/api/tasks/import", Scope::Write)
        },
        Route {
            bad_id: missing,
            ..r(Method::DELETE, "/api/tasks/{id}", Scope::Write)
        },
        Route {
            body: Some(json!({"policy": "random", "tasks": {"ids": ["kept"]}})),
            limit: json_limit,
            ..r(Method::POST, "/api/campaigns", Scope::Write)
        },
        Route {
            bad_id: not_uuid,
            ..r(Method::POST, "/api/campaigns/{id}/pause", Scope::Write)
        },
        Route {
            bad_id: not_uuid,
            ..r(Method::POST, "/api/campaigns/{id}/resume", Scope::Write)
        },
        Route {
            bad_id: not_uuid,
            ..r(Method::POST, "/api/campaigns/{id}/cancel", Scope::Write)
        },
        r(Method::GET, "/api/recordings", Scope::Read),
        Route {
            bad_id: not_uuid,
            ..r(Method::GET, "/api/recordings/{id}/har", Scope::Read)
        },
        Route {
            limit: Some(web::IMPORT_LIMIT),
            ..r(Method::POST, "/api/recordings/import", Scope::Write)
        },
        r(Method::GET, "/api/tokens", Scope::Admin),
        Route {
            body: Some(json!({"scope": "read", "name": "x"})),
            limit: json_limit,
            ..r(Method::POST, "/api/tokens", Scope::Admin)
        },
        Route {
            bad_id: missing,
            ..r(Method::DELETE, "/api/tokens/{id}", Scope::Admin)
        },
        r(Method::GET, "/api/sessions", Scope::Read),
        Route {
            body: Some(json!({"task_id": "kept"})),
            limit: json_limit,
            ..r(Method::POST, "/api/sessions", Scope::Write)
        },
        Route {
            bad_id: not_uuid,
            ..r(Method::GET, "/api/sessions/{id}", Scope::Read)
        },
        Route {
            bad_id: not_uuid,
            ..r(Method::DELETE, "/api/sessions/{id}", Scope::Write)
        },
        Route {
            bad_id: not_uuid,
            body: Some(json!({"action": "stop()"})),
            limit: json_limit,
            ..r(Method::POST, "/api/sessions/{id}/step", Scope::Write)
        },
        r(Method::GET, "/openenv/schema", Scope::Read),
        Route {
            body: Some(json!({"task_id": "kept"})),
            limit: json_limit,
            ..r(Method::POST, "/openenv/reset", Scope::Write)
        },
        Route {
            body: Some(
                json!({"action": {"action_str": "noop()"}, "session_id": uuid::Uuid::nil()}),
            ),
            limit: json_limit,
            ..r(Method::POST, "/openenv/step", Scope::Write)
        },
    ]
}

/// What a request could change: row counts, campaign statuses, revocations.
async fn stored(pool: &PgPool) -> Value {
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

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn every_route_refuses_every_bad_request_and_stores_nothing(pool: PgPool) {
    let engine = common::new_engine(pool.clone(), PolicyRegistry::builtin());
    let app = web::router_with(web::AppState { engine }, Access::Everything);
    let store = Store::from_pool(pool.clone());
    let admin = format!(
        "Bearer {}",
        store.create_token(Scope::Admin, "t").await.unwrap().1
    );
    let write = format!(
        "Bearer {}",
        store.create_token(Scope::Write, "t").await.unwrap().1
    );
    let read = format!(
        "Bearer {}",
        store.create_token(Scope::Read, "t").await.unwrap().1
    );
    let json_type = ("content-type", "application/json");
    let (s, _, _) = send(
        &app,
        Method::POST,
        "/api/tasks",
        &[json_type, ("authorization", &admin)],
        &task("kept", "shop").to_string(),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED);
    let (s, _, c) = send(
        &app,
        Method::POST,
        "/api/campaigns",
        &[json_type, ("authorization", &admin)],
        r#"{"policy": "random", "tasks": {"ids": ["kept"]}}"#,
    )
    .await;
    assert_eq!(s, StatusCode::ACCEPTED);
    let campaign = c["id"].as_str().unwrap().to_string();
    let before = stored(&pool).await;

    let mut checked = 0;
    for route in routes() {
        let good_id = if route.path.contains("/campaigns/") {
            campaign.as_str()
        } else if route.path.contains("/sessions/") || route.path.contains("/recordings/") {
            // A well-formed id of no open session: the body and parameters are checked.
            "00000000-0000-0000-0000-000000000000"
        } else {
            "kept"
        };
        let path = |id: &str| route.path.replace("{id}", id);
        let uri = path(good_id);
        let write_route = route.method != Method::GET;
        let body = route
            .body
            .as_ref()
            .map(Value::to_string)
            .unwrap_or_default();
        let ask = |uri: String,
                   headers: Vec<(&'static str, String)>,
                   body: String,
                   want: StatusCode,
                   what: &'static str| {
            let app = app.clone();
            let method = route.method.clone();
            async move {
                let h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
                let (s, _, e) = send(&app, method.clone(), &uri, &h, &body).await;
                assert_eq!(s, want, "{method} {uri} ({what}): {e}");
                // Every refusal is JSON naming what was wrong (413 from the import's body
                // extractor included).
                if s != StatusCode::PAYLOAD_TOO_LARGE || !uri.ends_with("/import") {
                    assert!(
                        e["error"]["message"]
                            .as_str()
                            .is_some_and(|m| !m.is_empty()),
                        "{method} {uri} ({what}): {e}"
                    );
                }
                e
            }
        };
        let auth = |token: &str| {
            vec![
                ("content-type", "application/json".to_string()),
                ("authorization", token.to_string()),
            ]
        };

        if let Some((bad, want)) = route.bad_id {
            let e = ask(path(bad), auth(&admin), body.clone(), want, "bad id").await;
            if want == StatusCode::BAD_REQUEST {
                assert!(!e["error"]["fields"].as_array().unwrap().is_empty(), "{e}");
            }
            let e = ask(
                path("a%00b"),
                auth(&admin),
                body.clone(),
                StatusCode::BAD_REQUEST,
                "NUL in path",
            )
            .await;
            assert!(
                e["error"]["message"].as_str().unwrap().contains("NUL"),
                "{e}"
            );
            checked += 2;
        }
        let e = ask(
            format!("{uri}?q=a%00b"),
            auth(&admin),
            body.clone(),
            StatusCode::BAD_REQUEST,
            "NUL in query",
        )
        .await;
        assert_eq!(e["error"]["fields"][0]["field"], "q");
        checked += 1;
        if let Some(limit) = route.limit {
            ask(
                uri.clone(),
                auth(&admin),
                " ".repeat(limit + 1),
                StatusCode::PAYLOAD_TOO_LARGE,
                "oversized body",
            )
            .await;
            checked += 1;
        }
        if write_route {
            let headers = vec![
                ("content-type", "text/plain".to_string()),
                ("authorization", admin.clone()),
            ];
            ask(
                uri.clone(),
                headers,
                body.clone(),
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "wrong content type",
            )
            .await;
            checked += 1;
        }
        if let Some(Value::Object(fields)) = &route.body {
            let mut typo = fields.clone();
            typo.insert("bogus_field".into(), json!(1));
            let e = ask(
                uri.clone(),
                auth(&admin),
                Value::Object(typo).to_string(),
                StatusCode::BAD_REQUEST,
                "unknown field",
            )
            .await;
            assert!(e.to_string().contains("bogus_field"), "{e}");
            checked += 1;
        }
        // `/metrics` (Prometheus' scrape) is the one route that ignores its query.
        if route.path != "/metrics" {
            let e = ask(
                format!("{uri}?bogus_param=1"),
                auth(&admin),
                body.clone(),
                StatusCode::BAD_REQUEST,
                "unknown parameter",
            )
            .await;
            assert_eq!(e["error"]["fields"][0]["field"], "bogus_param");
            checked += 1;
        }
        let e = ask(
            uri.clone(),
            vec![("content-type", "application/json".to_string())],
            body.clone(),
            StatusCode::UNAUTHORIZED,
            "no token",
        )
        .await;
        assert_eq!(e["error"]["type"], "unauthorized");
        checked += 1;
        let lower = match route.scope {
            Scope::Read => None,
            Scope::Write => Some(&read),
            Scope::Admin => Some(&write),
        };
        if let Some(lower) = lower {
            let e = ask(
                uri.clone(),
                auth(lower),
                body.clone(),
                StatusCode::FORBIDDEN,
                "wrong scope",
            )
            .await;
            assert_eq!(e["error"]["type"], "insufficient_scope");
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked} cases");
    assert_eq!(
        stored(&pool).await,
        before,
        "a refused request stored or changed something"
    );
}
