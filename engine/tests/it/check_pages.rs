//! Checks that read a page other than the final one (a rubric's `page`; WebArena's
//! `program_html` with a URL): the page is opened in the episode's own browser context
//! after the final page was captured, in real Chromium against the bundled shop.

use browser_pool::{Action, Target};
use engine::{InfraError, PageSnapshot};
use rubrics::{Rubric, Trajectory};
use serde_json::json;

use crate::common;

#[tokio::test]
async fn a_check_on_another_page_sees_the_episodes_state_and_the_final_page_is_kept() {
    let (_sites, shop, pool) = common::shop_and_pool().await;

    // The "agent" puts a mug in the cart (the shop keeps its cart in localStorage), then
    // ends on the help page.
    let mut session = pool.lease().await.unwrap();
    for action in [
        Action::Goto(format!("{shop}/product.html?id=blue-ceramic-mug")),
        Action::Click(Target::Selector("#add-to-cart".into())),
        Action::Goto(format!("{shop}/help.html")),
    ] {
        let report = session.act(&action).await.unwrap();
        assert!(report.error.is_none(), "{action:?}: {:?}", report.error);
    }

    let cart = format!("{shop}/cart.html");
    let rubric = Rubric::from_json(json!({"groups": [{"facts": [
        {"id": "line", "check": {"type": "element", "selector": "#line-blue-ceramic-mug .line-name",
            "text": {"contains": "Blue Ceramic Mug"}, "page": cart}},
        {"id": "lines", "check": {"type": "js", "expression": "document.querySelectorAll('.cart-line').length",
            "value_equals": 1, "page": cart}},
        {"id": "text", "check": {"type": "page_text", "contains": "blue ceramic mug", "page": cart}},
        // The same expression on the final page: the help page has no cart lines.
        {"id": "final", "check": {"type": "js", "expression": "document.querySelectorAll('.cart-line').length",
            "value_equals": 0}}
    ]}]}))
    .unwrap();

    let snapshot = PageSnapshot::capture(&mut session, &rubric).await.unwrap();
    assert!(snapshot.url.ends_with("/help.html"), "{}", snapshot.url);
    assert!(snapshot.pages[&cart].url.ends_with("/cart.html"));
    assert!(
        !snapshot.text.contains("Blue Ceramic Mug"),
        "the help page does not list the cart"
    );
    let j = rubrics::judge(&rubric, &Trajectory::default(), &snapshot)
        .await
        .unwrap();
    for v in &j.verdicts {
        assert!(v.passed, "{v:?}");
    }
    assert_eq!(j.verdicts[0].evidence, "Blue Ceramic Mug");

    // Stored and read back, the snapshot judges the same (re-judging needs no browser).
    let stored: PageSnapshot = serde_json::from_value(snapshot.to_stored()).unwrap();
    let again = rubrics::judge(&rubric, &Trajectory::default(), &stored)
        .await
        .unwrap();
    assert!(again.success);

    // A fresh context has an empty cart: the check reads the episode's state, not the
    // site's default.
    let mut fresh = pool.lease().await.unwrap();
    let report = fresh
        .act(&Action::Goto(format!("{shop}/help.html")))
        .await
        .unwrap();
    assert!(report.error.is_none());
    let snapshot = PageSnapshot::capture(&mut fresh, &rubric).await.unwrap();
    let j = rubrics::judge(&rubric, &Trajectory::default(), &snapshot)
        .await
        .unwrap();
    assert!(!j.success);
    let line = j.verdicts.iter().find(|v| v.fact_id == "line").unwrap();
    assert!(!line.passed);
    let text = j.verdicts.iter().find(|v| v.fact_id == "text").unwrap();
    assert!(!text.passed, "{text:?}");
    assert_eq!(
        line.reason,
        format!("nothing on {cart} matches `#line-blue-ceramic-mug .line-name`")
    );

    // A page that cannot be opened is an infrastructure failure, never the agent's.
    let dead = Rubric::from_json(json!({"groups": [{"facts": [
        {"check": {"type": "js", "expression": "1", "value_equals": 1, "page": "http://127.0.0.1:1/gone"}}
    ]}]}))
    .unwrap();
    match PageSnapshot::capture(&mut fresh, &dead).await {
        Err(e @ InfraError::CheckPage { .. }) => {
            assert_eq!(e.kind(), "check_page");
            assert!(e.to_string().contains("http://127.0.0.1:1/gone"), "{e}");
        }
        other => panic!("expected a check-page failure, got {other:?}"),
    }
    fresh.close().await;
    session.close().await;
    pool.shutdown().await;
}
