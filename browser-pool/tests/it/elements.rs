//! Real Chromium: the numbered element list reaches into iframes (same-origin and
//! cross-site, nested ones too), open shadow roots and scrolled containers, and actions by
//! number work there.

use browser_pool::{Action, BrowserPool, Element, PoolConfig, Session, parse_action};

use crate::common;

use common::{html, serve};

fn config() -> PoolConfig {
    let mut cfg = PoolConfig::new(PoolConfig::default_chromium());
    cfg.browsers = 1;
    cfg.contexts_per_browser = 1;
    cfg
}

fn act(line: &str) -> Action {
    parse_action(line).unwrap()
}

/// A page with a same-origin iframe (which holds a nested srcdoc iframe) and a cross-origin
/// one (`__CROSS__` is another server: another origin).
const FRAMES: &str = r#"<!doctype html><html><head><title>Frames</title><style>
  body { margin: 0; }
  #f { position: absolute; left: 100px; top: 150px; width: 500px; height: 300px; border: 7px solid #888; padding: 5px; }
  #x { position: absolute; left: 700px; top: 150px; width: 300px; height: 200px; }
  #after { position: absolute; left: 10px; top: 600px; }
</style></head><body>
<button id="top">Top button</button>
<iframe id="f" src="/inner.html"></iframe>
<button id="after">After frames</button>
<iframe id="x" src="__CROSS__/cross.html"></iframe>
</body></html>"#;

const INNER: &str = r#"<!doctype html><html><head><title>Inner</title></head><body style="margin:0">
<button id="b" style="position:absolute; left:20px; top:30px; width:120px; height:40px"
  onclick="window.n = (window.n || 0) + 1; this.textContent = 'clicked ' + window.n">Inner button</button>
<input id="name" style="position:absolute; left:20px; top:100px; width:150px" placeholder="Your name">
<select id="size" aria-label="Size" style="position:absolute; left:20px; top:150px"><option>Small</option><option>Large</option></select>
<button id="late" style="position:absolute; left:20px; top:200px"
  onclick="setTimeout(() => { this.textContent = 'inner late done'; }, 150)">Inner late</button>
<iframe id="g" style="position:absolute; left:200px; top:20px; width:250px; height:120px; border:3px solid; padding:0"
  srcdoc="<body style='margin:0'><button id='deep' onclick='this.textContent=&quot;deep clicked&quot;'>Deep button</button></body>"></iframe>
<button id="below" style="position:absolute; left:20px; top:400px" onclick="this.textContent = 'below clicked'">Below the fold</button>
</body></html>"#;

const CROSS: &str = r#"<!doctype html><html><head><title>Cross</title></head><body>
<button id="c">Cross-origin button</button></body></html>"#;

/// Open shadow roots: one with a nested one and a slot, labels inside a root, a closed root.
const SHADOW: &str = r#"<!doctype html><html><head><title>Shadow</title></head><body>
<label for="q">Outer label</label> <input id="q">
<div id="host"><button id="light" onclick="this.textContent = 'slotted clicked'">Slotted button</button></div>
<div id="closed"></div>
<script>
  const root = document.getElementById('host').attachShadow({ mode: 'open' });
  root.innerHTML = '<label for="q">Shadow label</label> <input id="q"> <button id="sb">Shadow button</button>'
    + ' <div id="inner-host"></div> <div><slot></slot></div>';
  root.getElementById('sb').addEventListener('click', (e) => { e.target.textContent = 'shadow clicked'; });
  const nested = root.getElementById('inner-host').attachShadow({ mode: 'open' });
  nested.innerHTML = '<button id="nb" aria-labelledby="nl">x</button><span id="nl">Nested button</span>';
  nested.getElementById('nb').addEventListener('click', (e) => { e.target.textContent = 'nested clicked'; });
  document.getElementById('closed').attachShadow({ mode: 'closed' }).innerHTML = '<button>Closed button</button>';
</script>
</body></html>"#;

/// A long list scrolled inside an `overflow: auto` box, and clipping containers that
/// positioned elements do or do not escape.
const SCROLL: &str = r#"<!doctype html><html><head><title>Scroll</title><style>
  body { margin: 0; }
  #list { position: absolute; left: 20px; top: 20px; width: 300px; height: 200px; overflow: auto; border: 1px solid; }
  #list button { display: block; height: 30px; width: 100%; margin: 0; }
  .box { position: absolute; top: 300px; width: 150px; height: 20px; overflow: hidden; }
  .box button { position: absolute; top: 40px; }
</style></head><body>
<div id="list"></div>
<p id="out">none</p>
<div style="position: relative"><div class="box" style="position: static; margin-left: 400px"><button>Escapes its box</button></div></div>
<div class="box" style="left: 600px"><button>Clipped by its box</button></div>
<div class="box" style="left: 800px"><button style="position: fixed; top: 500px; left: 800px">Fixed in a box</button></div>
<script>
  const list = document.getElementById('list');
  for (let i = 1; i <= 50; i++) {
    const b = document.createElement('button');
    b.textContent = 'Item ' + i;
    b.onclick = () => { document.getElementById('out').textContent = 'Item ' + i; };
    list.appendChild(b);
  }
</script>
</body></html>"#;

/// A cross-site iframe below the fold (`__CROSS__`: `localhost`, the top page being on
/// `127.0.0.1`), with controls and a frame of a third origin inside.
const XFRAMES: &str = r#"<!doctype html><html><head><title>Cross frames</title><style>
  body { margin: 0; }
  #x { position: absolute; left: 100px; top: 1200px; width: 600px; height: 300px; border: 4px solid #888; padding: 6px; }
</style></head><body>
<button id="top">Top button</button>
<iframe id="x" src="__CROSS__/xinner.html"></iframe>
<button id="after" style="position: absolute; left: 10px; top: 1600px">After the frame</button>
</body></html>"#;

const XINNER: &str = r#"<!doctype html><html><head><title>Cross inner</title></head><body style="margin:0">
<button id="b" style="position:absolute; left:20px; top:30px; width:120px; height:40px"
  onclick="window.n = (window.n || 0) + 1; this.textContent = 'cross clicked ' + window.n">Cross button</button>
<input id="name" style="position:absolute; left:20px; top:100px; width:150px" placeholder="Cross name">
<select id="size" aria-label="Cross size" style="position:absolute; left:20px; top:150px"><option>Small</option><option>Large</option></select>
<button id="late" style="position:absolute; left:20px; top:200px"
  onclick="setTimeout(() => { this.textContent = 'late done'; }, 150)">Late button</button>
<iframe style="position:absolute; left:250px; top:20px; width:250px; height:120px; border:0" src="__DEEP__/deep.html"></iframe>
</body></html>"#;

const DEEP: &str = r#"<!doctype html><html><head><title>Deep</title></head><body style="margin:0">
<button onclick="window.n = (window.n || 0) + 1; this.textContent = 'deep cross clicked ' + window.n">Deep cross button</button></body></html>"#;

async fn pool_and_pages() -> (BrowserPool, String) {
    let deep = serve(vec![html("/deep.html", DEEP)]).await;
    let cross = serve(vec![
        html("/cross.html", CROSS),
        html("/xinner.html", XINNER.replace("__DEEP__", &deep)),
    ])
    .await;
    let base = serve(vec![
        html("/frames.html", FRAMES.replace("__CROSS__", &cross)),
        html("/inner.html", INNER),
        html(
            "/xframes.html",
            XFRAMES.replace("__CROSS__", &cross.replace("127.0.0.1", "localhost")),
        ),
        html("/shadow.html", SHADOW),
        html("/scroll.html", SCROLL),
    ])
    .await;
    (BrowserPool::launch(config()).await.unwrap(), base)
}

fn find<'a>(elements: &'a [Element], label: &str) -> &'a Element {
    elements
        .iter()
        .find(|e| e.label == label)
        .unwrap_or_else(|| panic!("{label:?} in {:?}", labels(elements)))
}

fn labels(elements: &[Element]) -> Vec<&str> {
    elements.iter().map(|e| e.label.as_str()).collect()
}

async fn eval(s: &Session, js: &str) -> serde_json::Value {
    s.evaluate(js).await.unwrap().unwrap()
}

async fn ok(s: &mut Session, line: &str) -> browser_pool::ActReport {
    let r = s.act(&act(line)).await.unwrap();
    assert_eq!(r.error, None, "{line}");
    r
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1.0
}

/// The elements are these, in this order, numbered 1.. in it.
fn assert_listed(els: &[Element], expected: &[&str]) {
    assert_eq!(labels(els), expected);
    let ids: Vec<u32> = els.iter().map(|e| e.id).collect();
    assert_eq!(ids, (1..=els.len() as u32).collect::<Vec<_>>());
}

/// The element's box starts at (x, y) in top-viewport coordinates.
fn assert_at(el: &Element, x: f64, y: f64) {
    assert!(
        close(el.bbox.x, x) && close(el.bbox.y, y),
        "{} at ({x}, {y}): {:?}",
        el.label,
        el.bbox
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_origin_iframes_are_listed_and_usable() {
    let (pool, base) = pool_and_pages().await;
    let mut s = pool.lease().await.unwrap();
    ok(&mut s, &format!(r#"goto("{base}/frames.html")"#)).await;
    let obs = s.observe().await.unwrap();
    let els = &obs.elements;
    // Depth first: an iframe's elements where the iframe sits, the cross-origin one's too
    // (scanned inside it: see `cross_site_iframes_are_listed_and_usable`).
    assert_listed(
        els,
        &[
            "Top button",
            "Inner button",
            "Your name",
            "Size",
            "Inner late",
            "Deep button",
            "Below the fold",
            "After frames",
            "Cross-origin button",
        ],
    );

    // Boxes in top-viewport coordinates: the iframe's place plus its border and padding
    // (100 + 7 + 5, 150 + 7 + 5), once more for the nested one (its border is 3px).
    let inner = find(els, "Inner button");
    assert_at(inner, 132.0, 192.0);
    assert!(close(inner.bbox.width, 120.0) && close(inner.bbox.height, 40.0));
    let deep = find(els, "Deep button");
    assert_at(deep, 112.0 + 200.0 + 3.0, 162.0 + 20.0 + 3.0);
    assert!(inner.in_viewport && deep.in_viewport);
    // Inside the top viewport, but below the iframe's own fold.
    let below = find(els, "Below the fold");
    assert!(below.bbox.y < 720.0 && !below.in_viewport, "{below:?}");

    // Click by number: the page in the iframe sees it, at the box's centre.
    let r = ok(&mut s, &format!("click({})", inner.id)).await;
    let (x, y) = r.point.unwrap();
    assert!(close(x, 192.0) && close(y, 212.0), "{x}, {y}");
    let frame_text = |id: &str| {
        format!("document.getElementById('f').contentDocument.getElementById('{id}').textContent")
    };
    assert_eq!(eval(&s, &frame_text("b")).await, "clicked 1");
    ok(&mut s, &format!("click({})", deep.id)).await;
    assert_eq!(
        eval(
            &s,
            "document.getElementById('f').contentDocument.getElementById('g').contentDocument.getElementById('deep').textContent"
        )
        .await,
        "deep clicked"
    );
    // Settling waits for what the click set off inside the frame (a timeout there).
    ok(&mut s, &format!("click({})", find(els, "Inner late").id)).await;
    let obs = s.observe().await.unwrap();
    find(&obs.elements, "inner late done");

    // Clicking what is below the iframe's fold scrolls the iframe first.
    let obs = s.observe().await.unwrap();
    let below = find(&obs.elements, "Below the fold");
    ok(&mut s, &format!("click({})", below.id)).await;
    assert_eq!(eval(&s, &frame_text("below")).await, "below clicked");
    assert!(
        eval(&s, "document.getElementById('f').contentWindow.scrollY")
            .await
            .as_f64()
            .unwrap()
            > 0.0
    );

    // Typing by number reaches the input in the iframe (the text goes to the focused frame),
    // scrolled out of the iframe's view by the click above: typing brings it back.
    let obs = s.observe().await.unwrap();
    let name = find(&obs.elements, "Your name");
    ok(&mut s, &format!(r#"type({}, "Ada")"#, name.id)).await;
    ok(
        &mut s,
        &format!(r#"type({}, " Lovelace", clear=false)"#, name.id),
    )
    .await;
    let value = "document.getElementById('f').contentDocument.getElementById('name').value";
    assert_eq!(eval(&s, value).await, "Ada Lovelace");
    let obs = s.observe().await.unwrap();
    let name = find(&obs.elements, "Your name");
    assert_eq!(name.value.as_deref(), Some("Ada Lovelace"));
    ok(&mut s, &format!(r#"type({}, "Grace")"#, name.id)).await;
    assert_eq!(eval(&s, value).await, "Grace", "replaces");
    ok(
        &mut s,
        &format!(r#"select({}, "large")"#, find(&obs.elements, "Size").id),
    )
    .await;
    let size = "document.getElementById('f').contentDocument.getElementById('size').value";
    assert_eq!(eval(&s, size).await, "Large");

    // Scrolling an element of the iframe scrolls the iframe's document.
    ok(&mut s, &format!(r#"goto("{base}/frames.html")"#)).await;
    let obs = s.observe().await.unwrap();
    ok(
        &mut s,
        &format!("scroll({}, down)", find(&obs.elements, "Inner button").id),
    )
    .await;
    assert!(
        eval(&s, "document.getElementById('f').contentWindow.scrollY")
            .await
            .as_f64()
            .unwrap()
            > 0.0
    );
    // css= targets reach into same-origin iframes (nested ones too) when the top document
    // has no match; rubric reads (query_selector) do as well. Cross-origin frames are
    // searched only as the last observation found them: none of this document's yet.
    ok(&mut s, &format!(r#"goto("{base}/frames.html")"#)).await;
    ok(&mut s, r##"click(css="#deep")"##).await;
    let deep = "document.getElementById('f').contentDocument.getElementById('g').contentDocument.getElementById('deep').textContent";
    assert_eq!(eval(&s, deep).await, "deep clicked");
    ok(&mut s, r##"type(css="#name", "by selector")"##).await;
    assert_eq!(
        eval(
            &s,
            "document.getElementById('f').contentDocument.getElementById('name').value"
        )
        .await,
        "by selector"
    );
    let state = s.query_selector("#deep").await.unwrap().unwrap().unwrap();
    assert_eq!(state.text, "deep clicked");
    // The top document's own match wins over a frame's.
    assert_eq!(
        s.query_selector("button")
            .await
            .unwrap()
            .unwrap()
            .unwrap()
            .text,
        "Top button"
    );
    let r = s.act(&act(r##"click(css="#c")"##)).await.unwrap();
    assert!(
        r.error
            .as_deref()
            .unwrap_or_default()
            .contains("no element matches"),
        "{r:?}"
    );
    assert_eq!(s.query_selector("#c").await.unwrap().unwrap(), None);
    s.observe().await.unwrap();
    ok(&mut s, r##"click(css="#c")"##).await;
    let state = s.query_selector("#c").await.unwrap().unwrap().unwrap();
    assert_eq!(state.text, "Cross-origin button");

    // A stale number is an error, not a click somewhere else.
    ok(&mut s, &format!(r#"goto("{base}/frames.html")"#)).await;
    let r = s.act(&act("click(2)")).await.unwrap();
    assert!(r.error.unwrap().contains("not on the page any more"));
    s.close().await;
    pool.shutdown().await;
}

/// A cross-site iframe (another site: its document is out of the page's scripts' reach)
/// is scanned inside; its elements are numbered where it sits, boxes in top-viewport
/// coordinates, and clicks, typing and select by number reach them, the frame scrolled
/// into view first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cross_site_iframes_are_listed_and_usable() {
    let (pool, base) = pool_and_pages().await;
    let mut s = pool.lease().await.unwrap();
    ok(&mut s, &format!(r#"goto("{base}/xframes.html")"#)).await;
    let obs = s.observe().await.unwrap();
    let els = &obs.elements;
    assert_listed(
        els,
        &[
            "Top button",
            "Cross button",
            "Cross name",
            "Cross size",
            "Late button",
            "Deep cross button",
            "After the frame",
        ],
    );
    // The frame's content box starts at (100 + 4 + 6, 1200 + 4 + 6), below the fold.
    let button = find(els, "Cross button");
    assert_at(button, 130.0, 1240.0);
    assert!(!button.in_viewport);
    let deep = find(els, "Deep cross button");
    assert_at(deep, 110.0 + 250.0, 1210.0 + 20.0);
    assert_eq!(find(els, "Cross size").options, vec!["Small", "Large"]);

    // Clicking by number scrolls the frame into view and clicks inside it.
    let r = ok(&mut s, &format!("click({})", button.id)).await;
    let (x, y) = r.point.unwrap();
    assert!(y > 0.0 && y < 720.0 && close(x, 130.0 + 60.0), "{x}, {y}");
    assert!(eval(&s, "window.scrollY").await.as_f64().unwrap() > 0.0);
    let obs = s.observe().await.unwrap();
    let button = find(&obs.elements, "cross clicked 1");
    assert!(button.in_viewport, "{button:?}");
    assert!(close(button.bbox.y, y - 20.0), "{:?} vs {y}", button.bbox);
    ok(&mut s, &format!("click({})", button.id)).await;
    let obs = s.observe().await.unwrap();
    find(&obs.elements, "cross clicked 2");

    ok(
        &mut s,
        &format!("click({})", find(&obs.elements, "Deep cross button").id),
    )
    .await;
    let obs = s.observe().await.unwrap();
    find(&obs.elements, "deep cross clicked 1");

    // Settling waits for what the click set off inside the frame (a timeout there).
    ok(
        &mut s,
        &format!("click({})", find(&obs.elements, "Late button").id),
    )
    .await;
    let obs = s.observe().await.unwrap();
    find(&obs.elements, "late done");

    // Typing and select by number reach the frame's controls.
    let name = find(&obs.elements, "Cross name").id;
    ok(&mut s, &format!(r#"type({name}, "Ada")"#)).await;
    ok(
        &mut s,
        &format!(r#"type({name}, " Lovelace", clear=false)"#),
    )
    .await;
    let size = find(&obs.elements, "Cross size").id;
    ok(&mut s, &format!(r#"select({size}, "large")"#)).await;
    let obs = s.observe().await.unwrap();
    assert_eq!(
        find(&obs.elements, "Cross name").value.as_deref(),
        Some("Ada Lovelace")
    );
    assert_eq!(
        find(&obs.elements, "Cross size").value.as_deref(),
        Some("Large")
    );
    // css= targets and rubric reads reach into the frame when the top has no match.
    ok(&mut s, r##"type(css="#name", "by selector")"##).await;
    let state = s.query_selector("#name").await.unwrap().unwrap().unwrap();
    assert_eq!(state.value.as_deref(), Some("by selector"));
    ok(&mut s, r##"click(css="#b")"##).await;
    let state = s.query_selector("#b").await.unwrap().unwrap().unwrap();
    assert_eq!(state.text, "cross clicked 3");
    assert_eq!(s.query_selector("#nowhere").await.unwrap().unwrap(), None);
    // The page's own scripts still cannot reach into the frame: the scan did not open it.
    assert_eq!(
        eval(&s, "document.getElementById('x').contentDocument === null").await,
        true
    );

    // After the frame goes away its numbers are an error, not a click somewhere else.
    ok(&mut s, r#"press("Home")"#).await;
    let obs = s.observe().await.unwrap();
    // A frame in a frame, both out of view: each is brought into view, outermost first.
    let deep = find(&obs.elements, "deep cross clicked 1");
    assert!(!deep.in_viewport, "{deep:?}");
    ok(&mut s, &format!("click({})", deep.id)).await;
    let obs = s.observe().await.unwrap();
    assert!(find(&obs.elements, "deep cross clicked 2").in_viewport);
    ok(&mut s, r#"press("Home")"#).await;
    let obs = s.observe().await.unwrap();
    let after = find(&obs.elements, "After the frame").id;
    let cross = find(&obs.elements, "Cross name").id;
    s.evaluate("document.getElementById('x').remove()")
        .await
        .unwrap()
        .unwrap();
    let r = s.act(&act(&format!("click({cross})"))).await.unwrap();
    assert!(r.error.is_some(), "{r:?}");
    ok(&mut s, &format!("click({after})")).await;
    s.close().await;
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_shadow_roots_are_listed_and_usable() {
    let (pool, base) = pool_and_pages().await;
    let mut s = pool.lease().await.unwrap();
    ok(&mut s, &format!(r#"goto("{base}/shadow.html")"#)).await;
    let obs = s.observe().await.unwrap();
    let els = &obs.elements;
    // Labels are looked up in the element's own tree: the two inputs share an id.
    assert_eq!(
        labels(els),
        vec![
            "Outer label",
            "Shadow label",
            "Shadow button",
            "Nested button",
            "Slotted button"
        ],
        "the closed root stays closed; the slotted button is listed once"
    );
    assert!(els.iter().all(|e| e.in_viewport));
    let root = "document.getElementById('host').shadowRoot";
    ok(&mut s, &format!("click({})", find(els, "Shadow button").id)).await;
    assert_eq!(
        eval(&s, &format!("{root}.getElementById('sb').textContent")).await,
        "shadow clicked"
    );
    ok(&mut s, &format!("click({})", find(els, "Nested button").id)).await;
    assert_eq!(
        eval(
            &s,
            &format!(
                "{root}.getElementById('inner-host').shadowRoot.getElementById('nb').textContent"
            )
        )
        .await,
        "nested clicked"
    );
    ok(
        &mut s,
        &format!("click({})", find(els, "Slotted button").id),
    )
    .await;
    assert_eq!(
        eval(&s, "document.getElementById('light').textContent").await,
        "slotted clicked"
    );
    ok(
        &mut s,
        &format!(r#"type({}, "in the shadow")"#, find(els, "Shadow label").id),
    )
    .await;
    assert_eq!(
        eval(&s, &format!("{root}.getElementById('q').value")).await,
        "in the shadow"
    );
    assert_eq!(eval(&s, "document.getElementById('q').value").await, "");

    // On a fresh copy of the page, css= targets and selector reads reach into open roots,
    // nested ones too.
    ok(&mut s, &format!(r#"goto("{base}/shadow.html")"#)).await;
    let nested =
        format!("{root}.getElementById('inner-host').shadowRoot.getElementById('nb').textContent");
    assert_eq!(eval(&s, &nested).await, "x");
    assert_eq!(
        s.query_selector("#nb")
            .await
            .unwrap()
            .unwrap()
            .unwrap()
            .text,
        "x"
    );
    ok(&mut s, r##"click(css="#nb")"##).await;
    assert_eq!(eval(&s, &nested).await, "nested clicked");
    s.close().await;
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrolled_containers_hide_and_reveal_their_elements() {
    let (pool, base) = pool_and_pages().await;
    let mut s = pool.lease().await.unwrap();
    ok(&mut s, &format!(r#"goto("{base}/scroll.html")"#)).await;
    let obs = s.observe().await.unwrap();
    let els = &obs.elements;
    // The list shows 200px of 30px items: items 1 to 7; item 10 lies inside the window
    // but below the list's visible box.
    for (label, shown) in [("Item 1", true), ("Item 7", true), ("Item 8", false)] {
        assert_eq!(find(els, label).in_viewport, shown, "{label}");
    }
    let item10 = find(els, "Item 10");
    assert!(item10.bbox.y < 720.0 && !item10.in_viewport, "{item10:?}");
    // What a prompt shows of the list: the seven items in its view.
    let lines = obs.element_lines();
    let shown = lines.iter().filter(|l| l.contains("\"Item ")).count();
    assert_eq!(shown, 7, "{lines:?}");
    // Positioned elements escape the boxes that are not their containing block.
    assert!(find(els, "Escapes its box").in_viewport);
    assert!(!find(els, "Clipped by its box").in_viewport);
    assert!(find(els, "Fixed in a box").in_viewport);

    // Clicking an item scrolled out of the list scrolls it into the list's view first.
    let item40 = find(els, "Item 40");
    let r = ok(&mut s, &format!("click({})", item40.id)).await;
    assert_eq!(
        eval(&s, "document.getElementById('out').textContent").await,
        "Item 40"
    );
    let (_, y) = r.point.unwrap();
    assert!(y > 21.0 && y < 221.0, "inside the list's box: {y}");
    assert!(
        eval(&s, "document.getElementById('list').scrollTop")
            .await
            .as_f64()
            .unwrap()
            > 900.0
    );
    let obs = s.observe().await.unwrap();
    assert!(find(&obs.elements, "Item 40").in_viewport);
    assert!(!find(&obs.elements, "Item 1").in_viewport);
    s.close().await;
    pool.shutdown().await;
}
