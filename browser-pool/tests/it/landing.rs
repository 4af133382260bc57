//! A `goto` lands where it was sent, even when the page it leaves starts a navigation of
//! its own meanwhile; the new page's own navigations still go through.

use std::time::Duration;

use browser_pool::{Action, BrowserPool, PoolConfig, Session};

use crate::common;
use common::{Route, html};

/// Moves on by itself 700 ms after loading (a timer that long is not waited for by
/// settling), to a slow page on the other loopback name: another site, so the navigation
/// runs in another renderer, beside a goto's.
const MOVING_ON: &str = r#"<!doctype html><title>Moving on</title><p>moving on</p>
<script>setTimeout(() => {
  const u = new URL('/elsewhere.html', location.href);
  u.hostname = u.hostname === 'localhost' ? '127.0.0.1' : 'localhost';
  location.href = u.href;
}, 700)</script>"#;

/// Hops between the two loopback names every 100 ms, for good.
const HOPPING: &str = r#"<!doctype html><title>Hopping</title><p>hopping</p>
<script>setTimeout(() => {
  const u = new URL(location.href);
  u.hostname = u.hostname === 'localhost' ? '127.0.0.1' : 'localhost';
  location.href = u.href;
}, 100)</script>"#;

/// Forwards at once to the account page on the *other* loopback name (where the page a
/// goto left may live): the new page's own navigation, never to be refused.
const FORWARD: &str = r#"<!doctype html><title>Forwarding</title><script>
  const u = new URL('/account.html', location.href);
  u.hostname = u.hostname === 'localhost' ? '127.0.0.1' : 'localhost';
  location.replace(u.href);
</script>"#;

/// The same, from a timer, once the page has loaded.
const FORWARD_LATER: &str = r#"<!doctype html><title>Forwarding later</title><script>
  addEventListener('load', () => setTimeout(() => {
    const u = new URL('/account.html', location.href);
    u.hostname = u.hostname === 'localhost' ? '127.0.0.1' : 'localhost';
    location.href = u.href;
  }, 30));
</script>"#;

async fn serve() -> String {
    common::serve(vec![
        html("/moving.html", MOVING_ON),
        html("/hopping.html", HOPPING),
        html("/forward.html", FORWARD),
        html("/forward-later.html", FORWARD_LATER),
        html("/account.html", "<title>Account</title><p>account</p>"),
        html("/second.html", "<title>Second</title><p>second</p>"),
        Route {
            delay: Duration::from_millis(150),
            ..html(
                "/elsewhere.html",
                "<title>Elsewhere</title><p>elsewhere</p>",
            )
        },
    ])
    .await
}

async fn launch() -> (BrowserPool, Session) {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let mut cfg = PoolConfig::new(PoolConfig::default_chromium());
    cfg.browsers = 1;
    cfg.contexts_per_browser = 2;
    // The page limit at a minute: a goto that only lands by its fallback (twice the page
    // limit) takes far longer than the bound below, however busy the machine.
    cfg.script_timeout = Duration::from_secs(60);
    cfg.cdp_timeout = Duration::from_secs(60);
    let pool = BrowserPool::launch(cfg).await.unwrap();
    let s = pool.lease().await.unwrap();
    (pool, s)
}

/// Goes to `url` and checks the tab shows `title`, at once and a moment later (a
/// navigation that overtakes the goto commits after it).
async fn lands(s: &mut Session, url: &str, title: &str, what: &str) {
    let r = s.act(&Action::Goto(url.to_string())).await.unwrap();
    assert_eq!(r.error, None, "{what}");
    assert_eq!(s.observe().await.unwrap().title, title, "{what}");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        s.observe().await.unwrap().title,
        title,
        "{what}, 400 ms later"
    );
}

/// Sent while the page it leaves is starting a navigation of its own, which Chromium lets
/// go on beside the goto's and commit after it (3 of 11 gotos here, before the guard).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_goto_lands_where_it_was_sent_when_the_page_it_leaves_moves_on_meanwhile() {
    let base = serve().await;
    let other = base.replace("127.0.0.1", "localhost");
    let (pool, mut s) = launch().await;
    for wait in (540..=700).step_by(15) {
        s.act(&Action::Goto(format!("{other}/moving.html")))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(wait)).await;
        let what = format!("leaving {wait} ms after the page opened");
        lands(&mut s, &format!("{base}/second.html"), "Second", &what).await;
    }
    s.close().await;
    pool.shutdown().await;
}

/// A page that never stops moving (the soak's hopping page: 27-32% of gotos away from it
/// landed back on it before the guard).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_goto_away_from_a_page_hopping_across_sites_lands() {
    let base = serve().await;
    let (pool, mut s) = launch().await;
    for i in 0..8u64 {
        s.act(&Action::Goto(format!("{base}/hopping.html")))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(150 + 31 * i)).await;
        lands(
            &mut s,
            &format!("{base}/second.html"),
            "Second",
            &format!("goto {i}"),
        )
        .await;
    }
    s.close().await;
    pool.shutdown().await;
}

/// The page a goto lands on may forward at once, or a moment later, even to the site the
/// goto left: those navigations are its own and go through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_new_pages_own_navigations_go_through() {
    let base = serve().await;
    let other = base.replace("127.0.0.1", "localhost");
    let (pool, mut s) = launch().await;
    for (i, page) in ["forward.html", "forward-later.html"]
        .iter()
        .cycle()
        .take(6)
        .enumerate()
    {
        s.act(&Action::Goto(format!("{other}/hopping.html")))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(150 + 20 * i as u64)).await;
        let t = std::time::Instant::now();
        let r = s
            .act(&Action::Goto(format!("{base}/{page}")))
            .await
            .unwrap();
        assert_eq!(r.error, None);
        // The forward lands on the other name, where the hopping page lived.
        let mut title = String::new();
        for _ in 0..200 {
            let obs = s.observe().await.unwrap();
            title = obs.title;
            if title == "Account" {
                assert!(obs.url.starts_with(&other), "{}", obs.url);
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(title, "Account", "{page}, goto {i}");
        // Where the guard mistook the new page's forward for the old page's (Chromium left
        // our commit unreported), the goto only got there by its fallback (twice the page
        // limit: 2 minutes here).
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "{page}, goto {i}: took {:?}",
            t.elapsed()
        );
    }
    s.close().await;
    pool.shutdown().await;
}
