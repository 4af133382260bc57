//! The browsers behind hostile pages, against real Chromium: a crashed renderer, recycling,
//! a remote browser reached by its CDP address, simultaneous leases, and the observation
//! options (set-of-marks, PNG, device scale, accessibility tree, into iframes).

use std::time::{Duration, Instant};

use browser_pool::{Action, BrowserPool, ImageFormat, PoolConfig, PoolError};

use crate::hostile_site;

use hostile_site::{PROMPT, act, config, number_of, patient, renderers, serve, with_ax_tree_on};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_tab_fails_its_lease_with_an_infrastructure_error() {
    let base = serve().await;
    // Limits of a minute: a call left to time out on the dead renderer would show.
    let pool = BrowserPool::launch(patient(config())).await.unwrap();
    let mut s = pool.lease().await.unwrap();
    s.act(&Action::Goto(format!("{base}/"))).await.unwrap();
    let pid = s.browser_pid().unwrap();
    let victims = renderers(pid);
    assert!(!victims.is_empty(), "found the renderer processes");
    for r in &victims {
        let _ = std::process::Command::new("kill")
            .args(["-9", &r.to_string()])
            .status();
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    let err = s.observe().await.expect_err("the tab is gone");
    assert!(matches!(err, PoolError::TargetCrashed { .. }), "{err}");
    assert!(!err.browser_is_dead(), "the browser itself is fine");
    assert!(started.elapsed() < PROMPT, "{:?}", started.elapsed());
    drop(s);
    // The same browser serves the next episode.
    let mut s = pool.lease().await.unwrap();
    assert_eq!(s.browser_pid(), Some(pid));
    s.act(&Action::Goto(format!("{base}/second.html")))
        .await
        .unwrap();
    assert_eq!(s.observe().await.unwrap().title, "Second");
    assert_eq!(pool.stats().relaunches, 0);
    s.close().await;
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browsers_are_recycled_after_their_quota() {
    let base = serve().await;
    let mut cfg = config();
    cfg.recycle_after = Some(2);
    let pool = BrowserPool::launch(cfg).await.unwrap();
    let mut pids = Vec::new();
    for _ in 0..5 {
        let mut s = pool.lease().await.unwrap();
        pids.push(s.browser_pid().unwrap());
        s.act(&Action::Goto(format!("{base}/second.html")))
            .await
            .unwrap();
        assert_eq!(s.observe().await.unwrap().title, "Second");
        s.close().await;
    }
    assert_eq!(pids[0], pids[1]);
    assert_ne!(pids[1], pids[2], "replaced after two sessions");
    assert_eq!(pids[2], pids[3]);
    assert_ne!(pids[3], pids[4]);
    assert_eq!(pool.stats().recycled, 2);
    assert_eq!(pool.stats().relaunches, 0, "recycling is not a crash");
    // Retired browsers exit once their sessions are done.
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::path::Path::new(&format!("/proc/{}", pids[0])).exists() && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pids[0])).unwrap_or_default();
    assert!(
        stat.is_empty() || stat.contains(") Z"),
        "the first browser exited"
    );
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_browser_is_driven_by_its_cdp_address_and_left_running() {
    let base = serve().await;
    let profile = tempfile::tempdir().unwrap();
    let mut chrome = std::process::Command::new(PoolConfig::default_chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--remote-debugging-port=0",
            "about:blank",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Chromium writes its port and browser path here once DevTools listens.
    let file = profile.path().join("DevToolsActivePort");
    let deadline = Instant::now() + Duration::from_secs(60);
    let contents = loop {
        if let Ok(s) = std::fs::read_to_string(&file)
            && s.lines().count() >= 2
        {
            break s;
        }
        assert!(Instant::now() < deadline, "remote chromium did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let mut lines = contents.lines();
    let port = lines.next().unwrap().trim();
    let path = lines.next().unwrap().trim();
    let ws = format!("ws://127.0.0.1:{port}{path}");

    let mut cfg = config();
    cfg.browsers = 0;
    cfg.remote = vec![ws.clone()];
    let pool = BrowserPool::launch(cfg).await.unwrap();
    assert_eq!(pool.stats().browsers, 1);
    let mut a = pool.lease().await.unwrap();
    let mut b = pool.lease().await.unwrap();
    assert_eq!(
        a.browser_pid(),
        None,
        "a remote browser has no local process"
    );
    a.act(&Action::Goto(format!("{base}/"))).await.unwrap();
    b.act(&Action::Goto(format!("{base}/second.html")))
        .await
        .unwrap();
    assert_eq!(a.observe().await.unwrap().title, "Hostile");
    assert_eq!(b.observe().await.unwrap().title, "Second");
    // This browser keeps site isolation: the cross-site frame is in another renderer, out
    // of the session's reach. The observation lists the rest, without an error.
    a.act(&Action::Goto(format!("{base}/nested.html")))
        .await
        .unwrap();
    let obs = a.observe().await.unwrap();
    let inner = obs
        .elements
        .iter()
        .filter(|e| e.label == "Inner button")
        .count();
    assert_eq!(inner, 1, "{:?}", obs.elements);
    a.close().await;
    b.close().await;
    pool.shutdown().await;
    assert!(
        chrome.try_wait().unwrap().is_none(),
        "the pool leaves a remote browser running"
    );
    chrome.kill().unwrap();
    chrome.wait().unwrap();

    // Gone, its address is an error about reaching it, not about installing Chromium.
    let mut cfg = config();
    cfg.browsers = 0;
    cfg.remote = vec![ws];
    let err = BrowserPool::launch(cfg)
        .await
        .err()
        .expect("nothing to connect to");
    assert!(matches!(err, PoolError::Remote { .. }), "{err:?}");
    assert_eq!(err.kind(), "remote_unreachable");
    assert!(err.to_string().contains("--remote-debugging-port"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observation_options_marks_png_scale_and_accessibility_tree() {
    let base = serve().await;
    let mut cfg = config();
    cfg.set_of_marks = true;
    cfg.accessibility_tree = true;
    cfg.screenshot_format = ImageFormat::Png;
    cfg.device_scale_factor = 2.0;
    cfg.screenshot_scale = 0.5;
    let pool = BrowserPool::launch(cfg).await.unwrap();
    let mut s = pool.lease().await.unwrap();
    s.act(&Action::Goto(format!("{base}/"))).await.unwrap();
    let obs = s.observe().await.unwrap();
    assert_eq!(obs.screenshot.mime, "image/png");
    assert!(obs.screenshot.bytes.starts_with(b"\x89PNG"));
    let img = image::load_from_memory(&obs.screenshot.bytes).unwrap();
    assert_eq!(
        (img.width(), img.height()),
        (1280, 720),
        "2x device scale, halved"
    );
    assert_eq!(obs.screenshot.scale, 1.0);
    let marked = obs.marked.as_ref().expect("set-of-marks requested");
    assert_eq!(marked.mime, "image/png");
    assert_ne!(marked.bytes, obs.screenshot.bytes, "marks drawn on a copy");
    let tree = obs
        .ax_tree
        .as_deref()
        .expect("accessibility tree requested");
    // Interactive nodes carry the element numbers of the same observation.
    let number = |label: &str| number_of(&obs, label);
    let spin = format!("[{}] button \"Spin forever\"", number("Spin forever"));
    let download = format!("[{}] link \"Download\"", number("Download"));
    assert!(tree.contains(&spin), "{spin} in\n{tree}");
    assert!(tree.contains(&download), "{download} in\n{tree}");
    assert!(tree.contains("heading \"Start\""), "{tree}");
    assert!(
        !tree.contains("] heading"),
        "headings are not interactive: {tree}"
    );
    s.close().await;
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simultaneous_leases_spread_over_browsers_and_bad_selectors_fail_fast() {
    let base = serve().await;
    // Settling's cap at a minute: an invalid selector retried until it would show.
    let mut cfg = patient(config());
    cfg.browsers = 2;
    cfg.contexts_per_browser = 2;
    let pool = BrowserPool::launch(cfg).await.unwrap();
    let sessions: Vec<_> = futures::future::join_all((0..4).map(|_| pool.lease()))
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let mut per_browser = std::collections::BTreeMap::new();
    for s in &sessions {
        *per_browser.entry(s.browser_pid().unwrap()).or_insert(0) += 1;
    }
    assert_eq!(
        per_browser.values().copied().collect::<Vec<_>>(),
        vec![2, 2]
    );

    let mut s = sessions.into_iter().next().unwrap();
    s.act(&Action::Goto(format!("{base}/"))).await.unwrap();
    let started = Instant::now();
    let r = s.act(&act(r#"click(css="[[[")"#)).await.unwrap();
    assert!(r.error.is_some());
    assert!(
        started.elapsed() < PROMPT,
        "an invalid selector is not waited on: {:?}",
        started.elapsed()
    );
    s.close().await;
    pool.shutdown().await;
}

/// The top document's accessibility tree shows an iframe as a leaf; the pool reads each
/// frame's tree and puts it under its `Iframe` line, element numbers included: the
/// same-origin frame's and the cross-site one's (scanned in an isolated world).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_accessibility_tree_reaches_into_iframes() {
    let (pool, mut s) = with_ax_tree_on("/nested.html").await;
    let obs = s.observe().await.unwrap();
    let tree = obs.ax_tree.clone().expect("accessibility tree requested");
    let number = |label: &str| number_of(&obs, label);
    let inner = format!(
        "Iframe\n  [{}] button \"Inner button\"\n  [{}] link \"Inner link\"",
        number("Inner button"),
        number("Inner link")
    );
    assert!(tree.contains(&inner), "{inner} in\n{tree}");
    assert!(
        tree.contains(&format!("[{}] button \"Top button\"", number("Top button"))),
        "{tree}"
    );
    let numbers: Vec<u32> = obs
        .elements
        .iter()
        .filter(|e| e.label == "Inner button")
        .map(|e| e.id)
        .collect();
    assert_eq!(numbers.len(), 2, "both frames' buttons listed: {numbers:?}");
    for n in numbers {
        assert!(
            tree.contains(&format!("[{n}] button \"Inner button\"")),
            "[{n}] in\n{tree}"
        );
    }
    s.close().await;
    pool.shutdown().await;
}
