//! The `js` rule check against a real page in real Chromium: a predicate that holds, one
//! that does not, and one that never returns, which must fail with a "timed out" reason
//! within its limit and leave the browser usable.

use std::time::{Duration, Instant};

use browser_pool::{Action, Session};
use engine::PageSnapshot;
use rubrics::{FactVerdict, Rubric, Trajectory};

use crate::common;

fn rubric(expression: &str, equals: serde_json::Value) -> Rubric {
    Rubric::from_json(serde_json::json!({"groups": [{"facts": [
        {"id": "js", "check": {"type": "js", "expression": expression, "value_equals": equals}}
    ]}]}))
    .unwrap()
}

async fn judge(session: &mut Session, rubric: Rubric) -> (FactVerdict, Duration) {
    let t = Instant::now();
    let snapshot = PageSnapshot::capture(session, &rubric).await.unwrap();
    let j = rubrics::judge(&rubric, &Trajectory::default(), &snapshot)
        .await
        .unwrap();
    (j.verdicts[0].clone(), t.elapsed())
}

#[tokio::test]
async fn js_predicates_run_in_chromium_and_a_busy_loop_times_out() {
    let (_sites, shop, pool) = common::shop_and_pool().await;
    let mut session = pool.lease().await.unwrap();
    let report = session.act(&Action::Goto(shop.clone())).await.unwrap();
    assert!(report.error.is_none(), "{:?}", report.error);

    let (v, _) = judge(
        &mut session,
        rubric(
            "document.querySelectorAll('a').length > 0 && location.pathname === '/'",
            true.into(),
        ),
    )
    .await;
    assert!(v.passed, "{v:?}");
    assert_eq!(v.evidence, "true");

    let (v, _) = judge(
        &mut session,
        rubric("document.title", "No such title".into()),
    )
    .await;
    assert!(!v.passed, "{v:?}");
    assert!(v.reason.contains("does not equal"), "{}", v.reason);

    let (v, took) = judge(
        &mut session,
        rubric("(() => { while (true) {} })()", true.into()),
    )
    .await;
    assert!(!v.passed, "{v:?}");
    assert!(v.reason.contains("timed out after 2s"), "{}", v.reason);
    // Stopped at its limit (the reason says which), not left running: a hang guard that a
    // busy machine does not reach.
    assert!(took < Duration::from_secs(30), "took {took:?}");

    // The page's VM was stopped, not abandoned: the same page answers (a page still busy
    // would fail the call at the page limit), and the pool hands out another session.
    let t = Instant::now();
    assert_eq!(
        session.evaluate("1 + 1").await.unwrap().unwrap(),
        serde_json::json!(2)
    );
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    let other = pool.lease().await.unwrap();
    other.close().await;
    session.close().await;
    pool.shutdown().await;
}
