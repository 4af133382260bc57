//! Real Chromium, real pages served on loopback: every action, isolation between
//! sessions, dialogs, and recovery from a killed browser. The pointer actions are checked by
//! the events the page itself saw (dblclick, contextmenu, mouseover, HTML5 drop, mouse-event
//! drags).

use std::time::{Duration, Instant};

use browser_pool::{Action, BrowserPool, PoolConfig, PoolError, parse_action};

use crate::common;

use common::html;

const INDEX: &str = r#"<!doctype html><html><head><title>Test shop</title></head><body>
<h1 id="h">Hello</h1>
<button id="inc" onclick="document.getElementById('count').textContent = String(Number(document.getElementById('count').textContent) + 1)">Add one</button>
<span id="count">0</span>
<a id="next" href="/second.html">Second page</a>
<form action="/results.html" method="get">
  <label for="q">Search</label><input id="q" name="q" placeholder="Search here">
  <select id="size" name="size"><option value="s">Small</option><option value="l">Large</option></select>
  <input id="day" type="date" name="day">
  <label><input id="agree" type="checkbox" name="agree"> I agree</label>
  <button type="submit" id="go">Go</button>
</form>
<button id="alert" onclick="alert('hi there'); document.getElementById('h').textContent='after alert'">Alert</button>
<button id="hidden" style="display:none">Hidden</button>
<div style="height:3000px"></div><p id="bottom">bottom</p>
</body></html>"#;

const SECOND: &str = r#"<!doctype html><html><head><title>Second</title></head><body><p id="p">second page</p>
<script>document.cookie = "seen=1; path=/"; localStorage.setItem("k", "v");</script></body></html>"#;

const RESULTS: &str = r#"<!doctype html><html><head><title>Results</title></head><body>
<p id="echo"></p><script>document.getElementById('echo').textContent = location.search;</script></body></html>"#;

const STORAGE: &str = r#"<!doctype html><html><head><title>Storage</title></head><body><p id="s"></p>
<script>document.getElementById('s').textContent = 'cookie=[' + document.cookie + '] ls=[' + (localStorage.getItem('k') || '') + ']';</script></body></html>"#;

const POINTER: &str = r#"<!doctype html><html><head><title>Pointer</title><style>
  #hov:hover { color: rgb(255, 0, 0); }
  #list { height: 100px; overflow-y: auto; border: 1px solid; width: 200px; }
  #list li { height: 30px; }
  #src { width: 60px; height: 40px; background: #9cf; }
  #bin { width: 120px; height: 80px; background: #fc9; margin-top: 10px; }
  #box { position: absolute; z-index: 2; left: 400px; top: 40px; width: 50px; height: 50px; background: #c9f; }
  #mark { position: absolute; left: 600px; top: 200px; width: 20px; height: 20px; background: #ccc; }
</style></head><body>
<button id="dbl">Double me</button> <span id="dbl-out">none</span>
<button id="ctx">Right me</button> <span id="ctx-out">none</span>
<button id="hov">Hover me</button> <span id="hov-out">none</span>
<span id="late">early</span> <input id="ro" readonly value="fixed">
<select id="multi" multiple><option>Red</option><option>Green</option><option>Blue</option></select>
<ul id="list"></ul>
<div id="src" draggable="true">Drag me</div>
<div id="bin">Drop here</div> <span id="drop-out">none</span>
<div id="box">Box</div><div id="mark">X</div> <span id="box-out">none</span>
<script>
  const $ = (id) => document.getElementById(id);
  const clicks = [];
  $('dbl').addEventListener('click', (e) => clicks.push(e.detail));
  $('dbl').addEventListener('dblclick', () => { $('dbl-out').textContent = 'dblclick after ' + clicks.join(','); });
  $('ctx').addEventListener('contextmenu', (e) => { e.preventDefault(); $('ctx-out').textContent = 'contextmenu button ' + e.button; });
  $('hov').addEventListener('mouseover', () => { $('hov-out').textContent = 'over ' + getComputedStyle($('hov')).color; });
  setTimeout(() => { $('late').textContent = 'late'; }, 600);
  for (let i = 1; i <= 30; i++) { const li = document.createElement('li'); li.textContent = 'item ' + i; $('list').appendChild(li); }
  $('src').addEventListener('dragstart', (e) => { e.dataTransfer.setData('text/plain', 'payload-42'); });
  $('bin').addEventListener('dragover', (e) => e.preventDefault());
  $('bin').addEventListener('drop', (e) => { e.preventDefault(); $('drop-out').textContent = 'dropped ' + e.dataTransfer.getData('text/plain'); });
  // A mouse-event drag, the way jQuery UI and most widgets implement it.
  let grab = null, moves = 0;
  $('box').addEventListener('mousedown', (e) => { grab = { dx: e.clientX - $('box').offsetLeft, dy: e.clientY - $('box').offsetTop }; });
  document.addEventListener('mousemove', (e) => {
    if (!grab || !(e.buttons & 1)) return;
    moves++;
    $('box').style.left = (e.clientX - grab.dx) + 'px'; $('box').style.top = (e.clientY - grab.dy) + 'px';
  });
  document.addEventListener('mouseup', (e) => {
    if (!grab) return;
    grab = null;
    const b = $('box').getBoundingClientRect(), m = $('mark').getBoundingClientRect();
    const cx = b.left + b.width / 2, cy = b.top + b.height / 2;
    const on = cx >= m.left && cx <= m.right && cy >= m.top && cy <= m.bottom;
    $('box-out').textContent = (on ? 'on mark' : 'off mark') + ' after ' + (moves > 3 ? 'several' : moves) + ' moves';
  });
</script>
</body></html>"#;

async fn serve() -> String {
    common::serve(vec![
        html("/", INDEX),
        html("/index.html", INDEX),
        html("/second.html", SECOND),
        html("/results.html", RESULTS),
        html("/storage.html", STORAGE),
        html("/pointer.html", POINTER),
    ])
    .await
}

fn config() -> PoolConfig {
    let mut cfg = PoolConfig::new(PoolConfig::default_chromium());
    cfg.browsers = 1;
    cfg.contexts_per_browser = 2;
    cfg
}

fn act(line: &str) -> Action {
    parse_action(line).unwrap()
}

async fn text(session: &browser_pool::Session, css: &str) -> String {
    session
        .query_selector(css)
        .await
        .unwrap()
        .unwrap()
        .map(|s| s.text)
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn actions_observations_and_isolation() {
    let base = serve().await;
    // The page limit at a minute: a goto that waited for a load (below) would show.
    let mut cfg = config();
    cfg.script_timeout = Duration::from_secs(60);
    cfg.cdp_timeout = Duration::from_secs(60);
    let pool = BrowserPool::launch(cfg).await.unwrap();
    let mut s = pool.lease().await.unwrap();

    let r = s.act(&Action::Goto(format!("{base}/"))).await.unwrap();
    assert_eq!(r.error, None);
    let obs = s.observe().await.unwrap();
    assert_eq!(obs.title, "Test shop");
    assert_eq!(obs.url, format!("{base}/"));
    assert_eq!(
        &obs.screenshot.bytes[..3],
        &[0xFF, 0xD8, 0xFF],
        "JPEG magic"
    );
    assert_eq!((obs.screenshot.width, obs.screenshot.height), (1280, 720));
    let labels: Vec<&str> = obs.elements.iter().map(|e| e.label.as_str()).collect();
    for want in ["Add one", "Second page", "Search", "Go", "I agree"] {
        assert!(labels.contains(&want), "{want} in {labels:?}");
    }
    assert!(
        !labels.contains(&"Hidden"),
        "hidden elements are not listed"
    );
    let ids: Vec<u32> = obs.elements.iter().map(|e| e.id).collect();
    assert_eq!(
        ids,
        (1..=ids.len() as u32).collect::<Vec<_>>(),
        "numbered from 1 in order"
    );
    let size = obs.elements.iter().find(|e| e.tag == "select").unwrap();
    assert_eq!(size.options, vec!["Small", "Large"]);
    assert_eq!(size.value.as_deref(), Some("Small"));

    // Click by element number, then by coordinates.
    let inc = obs.elements.iter().find(|e| e.label == "Add one").unwrap();
    let r = s
        .act(&Action::Click(browser_pool::Target::Element(inc.id)))
        .await
        .unwrap();
    assert_eq!(r.error, None);
    let (cx, cy) = r.point.unwrap();
    assert!((cx - inc.bbox.center().0).abs() < 1.0 && (cy - inc.bbox.center().1).abs() < 1.0);
    assert_eq!(text(&s, "#count").await, "1");
    s.act(&act(&format!("click({cx}, {cy})"))).await.unwrap();
    assert_eq!(text(&s, "#count").await, "2");

    // A failed action is reported, and shown in the next observation, never a crash.
    let r = s.act(&act("click(999)")).await.unwrap();
    assert!(r.error.as_deref().unwrap().contains("element 999"), "{r:?}");
    let obs = s.observe().await.unwrap();
    assert!(obs.last_action_error.unwrap().contains("element 999"));
    assert_eq!(
        s.observe().await.unwrap().last_action_error,
        None,
        "errors are shown once"
    );
    let r = s.act(&act("click(5000, 10)")).await.unwrap();
    assert!(r.error.unwrap().contains("outside"));

    // Type, select, date, checkbox, then Enter submits the form.
    assert_eq!(
        s.act(&act(r##"type(css="#q", "old text")"##))
            .await
            .unwrap()
            .error,
        None
    );
    assert_eq!(
        s.act(&act(r##"type(css="#q", "red mug")"##))
            .await
            .unwrap()
            .error,
        None,
        "replaces"
    );
    assert_eq!(
        s.act(&act(r##"type(css="#q", "!", clear=false)"##))
            .await
            .unwrap()
            .error,
        None
    );
    assert_eq!(
        s.query_selector("#q")
            .await
            .unwrap()
            .unwrap()
            .unwrap()
            .value
            .as_deref(),
        Some("red mug!")
    );
    assert_eq!(
        s.act(&act(r##"select(css="#size", "large")"##))
            .await
            .unwrap()
            .error,
        None
    );
    let bad = s
        .act(&act(r##"select(css="#size", "Huge")"##))
        .await
        .unwrap();
    assert!(
        bad.error.unwrap().contains("Small"),
        "error lists the options"
    );
    assert_eq!(
        s.act(&act(r##"type(css="#day", "2026-12-24")"##))
            .await
            .unwrap()
            .error,
        None
    );
    assert_eq!(
        s.act(&act(r##"click(css="#agree")"##)).await.unwrap().error,
        None
    );
    assert_eq!(
        s.query_selector("#agree")
            .await
            .unwrap()
            .unwrap()
            .unwrap()
            .checked,
        Some(true)
    );
    s.act(&act(r##"click(css="#q")"##)).await.unwrap();
    assert_eq!(s.act(&act(r#"press("Enter")"#)).await.unwrap().error, None);
    let obs = s.observe().await.unwrap();
    assert_eq!(
        obs.title, "Results",
        "Enter submitted the form and the page settled"
    );
    let echo = text(&s, "#echo").await;
    assert!(
        echo.contains("q=red+mug%21")
            && echo.contains("size=l")
            && echo.contains("day=2026-12-24")
            && echo.contains("agree=on"),
        "{echo}"
    );

    // Back, scroll, link navigation.
    assert_eq!(s.act(&Action::Back).await.unwrap().error, None);
    assert_eq!(s.observe().await.unwrap().title, "Test shop");
    let r = s.act(&act("scroll(down)")).await.unwrap();
    assert_eq!(r.error, None);
    assert!(s.observe().await.unwrap().scroll.y > 100.0);
    s.act(&act(r##"click(css="#next")"##)).await.unwrap();
    assert_eq!(s.observe().await.unwrap().title, "Second");

    // A fragment-only goto is a same-document navigation and must not wait for a load.
    let started = Instant::now();
    let r = s
        .act(&Action::Goto(format!("{base}/second.html#part")))
        .await
        .unwrap();
    assert_eq!(r.error, None);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(
        s.observe()
            .await
            .unwrap()
            .url
            .ends_with("/second.html#part")
    );

    // Dialogs are accepted and reported instead of blocking the page.
    s.act(&Action::Goto(format!("{base}/"))).await.unwrap();
    let r = s.act(&act(r##"click(css="#alert")"##)).await.unwrap();
    assert_eq!(r.error, None);
    let obs = s.observe().await.unwrap();
    assert!(
        obs.events.iter().any(|e| matches!(
            e,
            browser_pool::PageEvent::Dialog { message, accepted: true, .. } if message == "hi there"
        )),
        "{:?}",
        obs.events
    );
    assert_eq!(
        obs.last_action_error, None,
        "a dialog is not an action error"
    );
    assert_eq!(text(&s, "#h").await, "after alert");

    // Goto refuses non-web schemes and reports unreachable hosts.
    assert!(
        s.act(&act(r#"goto("file:///etc/passwd")"#))
            .await
            .unwrap()
            .error
            .unwrap()
            .contains("http")
    );
    let r = s.act(&act(r#"goto("http://127.0.0.1:9/")"#)).await.unwrap();
    assert!(
        r.error.unwrap().contains("ERR_"),
        "connection refused is an action error"
    );

    // The second page set a cookie and localStorage; a new session sees neither.
    s.act(&Action::Goto(format!("{base}/storage.html")))
        .await
        .unwrap();
    assert_eq!(text(&s, "#s").await, "cookie=[seen=1] ls=[v]");
    let mut other = pool.lease().await.unwrap();
    other
        .act(&Action::Goto(format!("{base}/storage.html")))
        .await
        .unwrap();
    assert_eq!(text(&other, "#s").await, "cookie=[] ls=[]");
    other.close().await;
    s.close().await;

    let stats = pool.stats();
    assert_eq!(stats.leased, 0);
    assert_eq!(stats.leases, 2);

    // Leases take contexts opened ahead (one per browser by default) and the browser opens
    // the next meanwhile; a context opened ahead is as fresh as one opened on demand.
    let ready = async {
        while pool.standby_ready().await < 1 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(60), ready)
        .await
        .expect("a standby context is opened after a lease");
    let before = pool.stats().from_standby;
    let mut third = pool.lease().await.unwrap();
    assert_eq!(pool.stats().from_standby, before + 1);
    third
        .act(&Action::Goto(format!("{base}/storage.html")))
        .await
        .unwrap();
    assert_eq!(text(&third, "#s").await, "cookie=[] ls=[]");
    third.close().await;
    pool.shutdown().await;
}

async fn ok(s: &mut browser_pool::Session, line: &str) -> browser_pool::ActReport {
    let r = s.act(&act(line)).await.unwrap();
    assert_eq!(r.error, None, "{line}");
    r
}

async fn failed(s: &mut browser_pool::Session, line: &str) -> String {
    s.act(&act(line))
        .await
        .unwrap()
        .error
        .unwrap_or_else(|| panic!("{line} should have failed"))
}

async fn scroll_top(s: &browser_pool::Session) -> f64 {
    s.evaluate("document.getElementById('list').scrollTop")
        .await
        .unwrap()
        .unwrap()
        .as_f64()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pointer_scroll_history_and_wait_actions() {
    let base = serve().await;
    let pool = BrowserPool::launch(config()).await.unwrap();
    let mut s = pool.lease().await.unwrap();
    s.act(&Action::Goto(format!("{base}/pointer.html")))
        .await
        .unwrap();
    let obs = s.observe().await.unwrap();
    let id = |label: &str| {
        obs.elements
            .iter()
            .find(|e| e.label == label)
            .unwrap_or_else(|| panic!("{label} in {:?}", obs.element_lines()))
            .id
    };

    // Double click: two clicks (detail 1 then 2), then dblclick, by number and by point.
    ok(&mut s, &format!("double_click({})", id("Double me"))).await;
    assert_eq!(text(&s, "#dbl-out").await, "dblclick after 1,2");
    let dbl = obs
        .elements
        .iter()
        .find(|e| e.label == "Double me")
        .unwrap();
    let (x, y) = dbl.bbox.center();
    ok(&mut s, &format!("double_click({x}, {y})")).await;
    assert_eq!(text(&s, "#dbl-out").await, "dblclick after 1,2,1,2");

    // Right click: a contextmenu event with the right button.
    ok(&mut s, &format!("right_click({})", id("Right me"))).await;
    assert_eq!(text(&s, "#ctx-out").await, "contextmenu button 2");

    // Hover: mouseover fires and :hover applies.
    let r = ok(&mut s, r##"hover(css="#hov")"##).await;
    assert!(r.point.is_some());
    assert_eq!(text(&s, "#hov-out").await, "over rgb(255, 0, 0)");

    // HTML5 drag and drop: the drop handler sees the data set at dragstart.
    ok(&mut s, r##"drag(css="#src", to_css="#bin")"##).await;
    assert_eq!(text(&s, "#drop-out").await, "dropped payload-42");

    // A mouse-event drag: press, several moves with the button held, release on the mark.
    let obs = s.observe().await.unwrap();
    let mark = obs
        .elements
        .iter()
        .find(|e| e.label == "Box")
        .map(|_| ())
        .is_none();
    assert!(
        mark,
        "the box is not an interactive element; drag it by coordinates"
    );
    ok(&mut s, "drag(425, 65, to_x=610, to_y=210)").await;
    assert_eq!(text(&s, "#box-out").await, "on mark after several moves");
    // Released away from the mark, the page sees it too.
    ok(&mut s, "drag(610, 210, to_x=800, to_y=400)").await;
    assert_eq!(text(&s, "#box-out").await, "off mark after several moves");

    // Scrolling an element: the list scrolls, the page does not.
    let page_y = s.observe().await.unwrap().scroll.y;
    assert_eq!(scroll_top(&s).await, 0.0);
    ok(&mut s, r##"scroll(css="#list li:nth-child(2)", down)"##).await;
    let down = scroll_top(&s).await;
    assert!(down >= 60.0, "list scrolled by most of its height: {down}");
    assert_eq!(s.observe().await.unwrap().scroll.y, page_y);
    let list = s.query_selector("#list").await.unwrap().unwrap().unwrap();
    assert!(list.text.contains("item 30"));
    let obs = s.observe().await.unwrap();
    let bbox = s
        .evaluate("JSON.stringify(document.getElementById('list').getBoundingClientRect())")
        .await
        .unwrap()
        .unwrap();
    let rect: serde_json::Value = serde_json::from_str(bbox.as_str().unwrap()).unwrap();
    let (lx, ly) = (
        rect["left"].as_f64().unwrap() + 50.0,
        rect["top"].as_f64().unwrap() + 50.0,
    );
    ok(&mut s, &format!("scroll({lx}, {ly}, down)")).await;
    assert!(scroll_top(&s).await > down, "scrolled further by point");
    // Two pages down, two pages up.
    ok(&mut s, r##"scroll(css="#list", up)"##).await;
    ok(&mut s, r##"scroll(css="#list", up)"##).await;
    assert_eq!(scroll_top(&s).await, 0.0);
    assert!(
        failed(&mut s, r##"scroll(css="#list", up)"##)
            .await
            .contains("already at its top")
    );
    let plain = obs
        .elements
        .iter()
        .find(|e| e.label == "Double me")
        .unwrap();
    assert!(
        failed(&mut s, &format!("scroll({}, down)", plain.id))
            .await
            .contains("not inside a scrollable area")
    );
    assert!(
        failed(&mut s, "scroll(999, down)")
            .await
            .contains("element 999")
    );

    // Failed pointer actions are messages, never crashes.
    assert!(failed(&mut s, "hover(999)").await.contains("element 999"));
    assert!(
        failed(&mut s, "double_click(5000, 5)")
            .await
            .contains("outside")
    );
    assert!(
        failed(&mut s, r##"drag(css="#nothing", to_css="#bin")"##)
            .await
            .contains("drag source")
    );
    assert!(
        failed(&mut s, r##"drag(css="#src", to=999)"##)
            .await
            .contains("drag destination")
    );

    // In a multiple <select>, each select() adds an option.
    ok(&mut s, r##"select(css="#multi", "Red")"##).await;
    ok(&mut s, r##"select(css="#multi", "blue")"##).await;
    let chosen = s
        .evaluate("Array.from(document.getElementById('multi').selectedOptions).map(o => o.text).join(',')")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(chosen, "Red,Blue");

    // Typing into a read-only field is an error, not a silent no-op.
    assert!(
        failed(&mut s, r##"type(css="#ro", "x")"##)
            .await
            .contains("read-only")
    );

    // wait(ms) lets a timer run before the next observation.
    s.act(&Action::Goto(format!("{base}/pointer.html")))
        .await
        .unwrap();
    assert_eq!(text(&s, "#late").await, "early");
    let t = Instant::now();
    ok(&mut s, "wait(800)").await;
    assert!(t.elapsed() >= Duration::from_millis(800));
    assert_eq!(text(&s, "#late").await, "late");

    // Forward undoes back; with nothing ahead it is an error.
    assert!(failed(&mut s, "forward()").await.contains("no next page"));
    s.act(&Action::Goto(format!("{base}/second.html")))
        .await
        .unwrap();
    ok(&mut s, "back()").await;
    assert_eq!(s.observe().await.unwrap().title, "Pointer");
    ok(&mut s, "forward()").await;
    assert_eq!(s.observe().await.unwrap().title, "Second");

    s.close().await;
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_browser_fails_fast_and_is_replaced() {
    let base = serve().await;
    let mut cfg = config();
    cfg.cdp_timeout = Duration::from_secs(3);
    let pool = BrowserPool::launch(cfg).await.unwrap();
    let mut s = pool.lease().await.unwrap();
    s.act(&Action::Goto(format!("{base}/"))).await.unwrap();
    let pid = s.browser_pid().unwrap();
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;

    let started = Instant::now();
    let err = s.observe().await.expect_err("the browser is gone");
    assert!(
        matches!(
            err,
            PoolError::BrowserGone { .. } | PoolError::Timeout { .. }
        ),
        "{err}"
    );
    assert!(err.browser_is_dead());
    // Failed, not waited on: the bound is a hang guard (it takes well under the 3 s call
    // limit) that a busy machine does not reach.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "failed fast: {:?}",
        started.elapsed()
    );
    drop(s);

    // The next lease relaunches the browser and works.
    let mut s = pool.lease().await.unwrap();
    assert_ne!(s.browser_pid(), Some(pid));
    s.act(&Action::Goto(format!("{base}/"))).await.unwrap();
    assert_eq!(s.observe().await.unwrap().title, "Test shop");
    assert_eq!(pool.stats().relaunches, 1);
    s.close().await;
    pool.shutdown().await;
}

/// A spinner: an endless CSS animation, as real websites have.
const SPINNER: &str = r#"<!doctype html><html><head><title>Spinner</title><style>
  @keyframes spin { from { transform: rotate(0deg); } to { transform: rotate(360deg); } }
  #s { width: 40px; height: 40px; background: #36c; animation: spin 1s linear infinite; }
</style></head><body><div id="s"></div></body></html>"#;

/// Animation frames the page gets in half a second.
const FRAMES_IN_HALF_A_SECOND: &str = "new Promise((done) => { let n = 0; \
    const start = performance.now(); \
    const tick = () => { n++; if (performance.now() - start < 500) requestAnimationFrame(tick); else done(n); }; \
    requestAnimationFrame(tick); })";

/// Without the frame-rate limit (the default, for fast screenshots) the browser runs with
/// Chromium's pacing switched off; with `frame_rate_limit` frames are paced at 60 a second.
/// How fast an unpaced page then renders depends on the CPU it gets, so that is measured
/// (`surfgym bench env` with and without `--frame-rate-limit`), not asserted: on a busy
/// machine the flat-out rate can drop below 60 frames a second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_frame_rate_limit_paces_endless_animations() {
    const UNPACED: [&str; 2] = ["--disable-frame-rate-limit", "--disable-gpu-vsync"];
    let base = common::serve(vec![html("/spinner.html", SPINNER)]).await;
    for limit in [false, true] {
        let mut cfg = config();
        cfg.frame_rate_limit = limit;
        let pool = BrowserPool::launch(cfg).await.unwrap();
        let mut s = pool.lease().await.unwrap();
        let pid = s.browser_pid().unwrap();
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        for switch in UNPACED {
            assert_eq!(
                args.iter().any(|a| a == switch),
                !limit,
                "{switch} with frame_rate_limit {limit}: {args:?}"
            );
        }
        if limit {
            ok(&mut s, &format!(r#"goto("{base}/spinner.html")"#)).await;
            let n = s
                .evaluate(FRAMES_IN_HALF_A_SECOND)
                .await
                .unwrap()
                .unwrap()
                .as_u64()
                .unwrap();
            // A load only lowers the rate, so this bound holds on any machine.
            assert!(n <= 40, "60 frames a second at most: {n} in 0.5 s");
        }
        s.close().await;
        pool.shutdown().await;
    }
}

const SCREEN_PAGE: &str = r#"<!doctype html><html><head><title>Screen</title></head><body>
<button id="pop" onclick="window.open('/screen.html', '_blank')">Open another</button></body></html>"#;

const MEASURE: &str = "[innerWidth, innerHeight, devicePixelRatio]";

/// A session leased at `screen` (the pool's when `None`) on the test page: the session,
/// what the page measures (`MEASURE`) and the size of its screenshot.
async fn open_at(
    pool: &BrowserPool,
    screen: Option<&browser_pool::Screen>,
    base: &str,
) -> (browser_pool::Session, serde_json::Value, (u32, u32)) {
    let mut s = pool.lease_with(screen).await.unwrap();
    ok(&mut s, &format!(r#"goto("{base}/screen.html")"#)).await;
    let measured = s.evaluate(MEASURE).await.unwrap().unwrap();
    let shot = s.observe().await.unwrap().screenshot;
    let img = image::load_from_memory(&shot.bytes).unwrap();
    assert_eq!((shot.width, shot.height), (img.width(), img.height()));
    (s, measured, (img.width(), img.height()))
}

/// A lease's own screen: its pages (a popup included) render at it and its screenshots have
/// its size, while the pool's other leases keep the pool's; an out-of-range one is refused
/// before it takes a slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_renders_at_its_own_screen() {
    let base = common::serve(vec![html("/screen.html", SCREEN_PAGE)]).await;
    let pool = BrowserPool::launch(config()).await.unwrap();
    let small = browser_pool::Screen {
        width: 400,
        height: 300,
        device_scale: 2.0,
        screenshot_scale: 0.5,
    };
    let (mut s, measured, shot) = open_at(&pool, Some(&small), &base).await;
    assert_eq!(s.screen(), small);
    assert_eq!(measured, serde_json::json!([400, 300, 2]));
    // 400x300 CSS pixels at 2 device pixels each, captured at half size.
    assert_eq!(shot, (400, 300));
    ok(&mut s, r##"click(css="#pop")"##).await;
    assert_eq!(
        s.observe().await.unwrap().tabs.len(),
        2,
        "the popup is a tab"
    );
    let measured = s.evaluate(MEASURE).await.unwrap().unwrap();
    assert_eq!(measured, serde_json::json!([400, 300, 2]), "the popup too");

    // Another lease beside it, on the pool's own screen.
    let (plain, measured, shot) = open_at(&pool, None, &base).await;
    assert_eq!(measured, serde_json::json!([1280, 720, 1]));
    assert_eq!(shot, (1280, 720));
    plain.close().await;
    s.close().await;

    // Larger than the launched window: emulated, nothing clipped.
    let large = browser_pool::Screen {
        width: 1920,
        height: 1080,
        device_scale: 1.0,
        screenshot_scale: 1.0,
    };
    let (big, measured, shot) = open_at(&pool, Some(&large), &base).await;
    assert_eq!(measured, serde_json::json!([1920, 1080, 1]));
    assert_eq!(shot, (1920, 1080));
    big.close().await;

    let tiny = browser_pool::Screen { width: 40, ..small };
    match pool.lease_with(Some(&tiny)).await {
        Err(PoolError::Config(m)) => assert!(m.contains("width"), "{m}"),
        other => panic!("a 40 px wide screen was not refused: {:?}", other.err()),
    }
    assert_eq!(pool.stats().leases, 3, "the refused lease took no context");
    pool.shutdown().await;
}
