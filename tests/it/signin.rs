//! The dashboard's sign-in in real Chromium, against a server that asks for tokens on
//! every route (as beyond loopback): the dashboard sends the browser to /signin, a pasted
//! token signs it in (an HttpOnly cookie its scripts cannot read), the dashboard then loads
//! its data and says who is signed in, and signing out sends it back to /signin.

use crate::common;

use std::time::{Duration, Instant};

use browser_pool::{Action, Target};
use common::js;
use policy::PolicyRegistry;
use serde_json::json;
use sqlx::PgPool;
use store::Scope;

async fn wait_for(s: &browser_pool::Session, cond: &str, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while js(s, cond).await != json!(true) {
        assert!(Instant::now() < deadline, "{what}: timed out");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn the_dashboard_signs_in_and_out_with_a_pasted_token(pool: PgPool) {
    let engine = common::new_engine(pool, PolicyRegistry::builtin());
    let (view, secret) = engine
        .store()
        .create_token(Scope::Read, "browser")
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let state = web::AppState {
        engine: engine.clone(),
    };
    tokio::spawn(async move { web::serve_with(listener, state, web::Access::Everything).await });
    let base = format!("http://{addr}");

    let mut s = engine.pool().await.unwrap().lease().await.unwrap();
    let r = s.act(&Action::Goto(format!("{base}/"))).await.unwrap();
    assert_eq!(r.error, None);
    wait_for(
        &s,
        "location.pathname === '/signin'",
        "redirect to the sign-in page",
    )
    .await;
    wait_for(
        &s,
        "!!document.body && document.body.dataset.ready === '1'",
        "the sign-in page",
    )
    .await;

    // A wrong token is refused with the server's message, and the page stays.
    let typed = |text: &str| Action::Type {
        target: Target::Selector("#token".into()),
        text: text.into(),
        clear: true,
    };
    let submit = Action::Click(Target::Selector("#signin-submit".into()));
    assert_eq!(s.act(&typed("sgt_wrong")).await.unwrap().error, None);
    assert_eq!(s.act(&submit).await.unwrap().error, None);
    wait_for(
        &s,
        "document.getElementById('signin-message').textContent.includes('not valid')",
        "the refusal",
    )
    .await;

    assert_eq!(s.act(&typed(&secret)).await.unwrap().error, None);
    assert_eq!(s.act(&submit).await.unwrap().error, None);
    wait_for(&s, "location.pathname === '/'", "back to the dashboard").await;
    wait_for(
        &s,
        "!!document.body && document.body.dataset.ready === '1'",
        "the dashboard's data",
    )
    .await;
    wait_for(
        &s,
        "!!document.getElementById('signed-in')",
        "who is signed in",
    )
    .await;
    let who = js(&s, "document.getElementById('signed-in').textContent").await;
    assert!(who.as_str().unwrap().contains(&view.prefix), "{who}");
    assert_eq!(
        js(&s, "document.cookie").await,
        json!(""),
        "the session cookie is HttpOnly"
    );
    let last_used = engine.store().list_tokens().await.unwrap()[0].last_used_at;
    assert!(
        last_used.is_some(),
        "the dashboard's requests used the token"
    );

    let out = Action::Click(Target::Selector("#signout".into()));
    assert_eq!(s.act(&out).await.unwrap().error, None);
    wait_for(&s, "location.pathname === '/signin'", "signed out").await;
    let r = s.act(&Action::Goto(format!("{base}/"))).await.unwrap();
    assert_eq!(r.error, None);
    wait_for(&s, "location.pathname === '/signin'", "the cookie is gone").await;
}
