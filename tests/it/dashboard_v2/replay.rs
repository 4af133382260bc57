//! The replay: elements as an accessibility view (derived, or the tree recorded with
//! `--ax-tree`), the policy call, legible marks, keys.

use super::*;

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn the_replay_shows_elements_and_the_policy_call_and_moves_by_keys(pool: PgPool) {
    let engine = common::new_engine(pool.clone(), PolicyRegistry::builtin());
    let f = fixture(&engine, &pool).await;
    let episode = f.episodes[&("t-shop".to_string(), 1)];
    let addr = serve_web(&engine).await;
    let mut s = engine.pool().await.unwrap().lease().await.unwrap();
    open_dashboard(&mut s, &format!("http://{addr}/#/episodes/{episode}")).await;

    // The accessibility view: every element with its number, in reading order, the
    // off-screen one apart.
    let nodes = js(
        &s,
        "Array.from(document.querySelectorAll('#a11y-tree .a11y-node')).map(n => n.textContent)",
    )
    .await;
    assert_eq!(
        nodes,
        json!([
            "[3] textbox \"Search\"",
            "[1] button \"Add to cart\"",
            format!("[2] link {}", json!(HOSTILE_LABEL)),
            "[4] link \"Footer\"",
        ])
    );
    assert_eq!(
        js(
            &s,
            "document.querySelector('#a11y-tree .a11y-group').textContent.startsWith('off-screen (1)')"
        )
        .await,
        json!(true)
    );
    assert_eq!(
        js(&s, "document.getElementById('policy-call-none') !== null").await,
        json!(true),
        "the first step made no model call"
    );

    // Keys move between steps.
    let counter = "document.getElementById('step-counter').textContent";
    assert_eq!(js(&s, counter).await, json!("1 / 2"));
    press(&mut s, "ArrowRight").await;
    assert_eq!(js(&s, counter).await, json!("2 / 2"));
    press(&mut s, "End").await;
    assert_eq!(js(&s, counter).await, json!("final / 2"));
    press(&mut s, "Home").await;
    assert_eq!(js(&s, counter).await, json!("1 / 2"));
    press(&mut s, "ArrowRight").await;

    // The second step's policy call: the prompt's two images are the two steps'
    // screenshots, the raw output is text, a chip per token.
    let images = js(
        &s,
        "Array.from(document.querySelectorAll('#step-prompt .prompt-image img')).map(i => i.getAttribute('src'))",
    )
    .await;
    assert_eq!(
        images,
        json!([
            format!("/api/blobs/{}", f.shots[0]),
            format!("/api/blobs/{}", f.shots[1])
        ])
    );
    assert_eq!(
        js(&s, "document.getElementById('step-raw-output').textContent").await,
        json!(HOSTILE_OUTPUT)
    );
    assert_eq!(
        js(
            &s,
            "Array.from(document.querySelectorAll('#step-tokens .token')).map(t => t.textContent)"
        )
        .await,
        json!(["#11-0.01", "#22-2.50", "#33-0.20"])
    );
    assert_eq!(
        js(
            &s,
            "document.getElementById('step-prompt').textContent.includes('now: ' + String.fromCharCode(60) + 'img src=q')"
        )
        .await,
        json!(true),
        "the prompt's text around its images"
    );

    // `e` shows the element numbers on the screenshot, legible: at least 12 px.
    press(&mut s, "e").await;
    until(
        &s,
        "document.querySelectorAll('#overlay .el-num').length === 3",
        "the visible elements' numbers",
        Duration::from_secs(5),
    )
    .await;
    let size = js(
        &s,
        "Array.from(document.querySelectorAll('#overlay .el-num')).map(n => [parseFloat(getComputedStyle(n).fontSize), n.getBoundingClientRect().height, getComputedStyle(n).color, getComputedStyle(n).backgroundColor])",
    )
    .await;
    for n in size.as_array().unwrap() {
        assert!(n[0].as_f64().unwrap() >= 12.0, "font size {n}");
        assert!(n[1].as_f64().unwrap() >= 12.0, "label height {n}");
        assert_eq!(n[2], "rgb(255, 255, 255)", "{n}");
        assert_eq!(n[3], "rgb(49, 46, 129)", "{n}");
    }
    // Nothing injected ran; the page's and model's strings are text.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(js(&s, "typeof window.__xss").await, json!("undefined"));
    assert_eq!(
        js(
            &s,
            "document.querySelectorAll('#a11y-tree img, #step-raw-output img, #instruction img, #instruction b, .prompt-text img').length"
        )
        .await,
        json!(0)
    );
    js(
        &s,
        "document.getElementById('policy-call').scrollIntoView()",
    )
    .await;
    screenshot(&mut s, "replay-policy-call").await;
    s.close().await;
    engine.shutdown().await;
}

/// A step recorded with `--ax-tree`: Chromium's tree as the policy was shown it.
const RECORDED_TREE: &str = r#"[3] textbox "Search"
navigation "Main"
  [1] button "Add to cart"
  [2] link "<img src=t onerror=window.__xss=7>"
heading "Basket" level=2
  StaticText "<b>Total</b> 12.50<img src=u onerror=window.__xss=8>""#;

/// A step with a recorded tree shows it, numbers and all, as text; a step without one
/// shows the view derived from its elements and says so; keys and outlines still work.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn the_replay_shows_a_recorded_accessibility_tree_as_text(pool: PgPool) {
    let engine = common::new_engine(pool.clone(), PolicyRegistry::builtin());
    let f = fixture(&engine, &pool).await;
    let episode = f.episodes[&("t-shop".to_string(), 1)];
    sqlx::query("UPDATE steps SET ax_tree = $2 WHERE episode_id = $1 AND idx = 1")
        .bind(episode)
        .bind(RECORDED_TREE)
        .execute(&pool)
        .await
        .unwrap();
    let addr = serve_web(&engine).await;
    let api = get(addr, &format!("/api/episodes/{episode}")).await;
    assert_eq!(api["steps"][0]["ax_tree"], Value::Null, "not recorded");
    assert_eq!(api["steps"][1]["ax_tree"], json!(RECORDED_TREE));

    let mut s = engine.pool().await.unwrap().lease().await.unwrap();
    open_dashboard(&mut s, &format!("http://{addr}/#/episodes/{episode}")).await;
    let source = "document.getElementById('a11y-tree').dataset.source";
    let hint = "document.querySelector('#a11y-tree .hint').textContent";
    assert_eq!(js(&s, source).await, json!("derived"));
    assert!(
        js(&s, hint)
            .await
            .as_str()
            .unwrap()
            .starts_with("Derived from the elements"),
        "the derived view says what it is"
    );

    press(&mut s, "ArrowRight").await;
    assert_eq!(
        js(&s, "document.getElementById('step-counter').textContent").await,
        json!("2 / 2")
    );
    assert_eq!(js(&s, source).await, json!("recorded"));
    assert!(
        js(&s, hint)
            .await
            .as_str()
            .unwrap()
            .starts_with("Recorded with --ax-tree"),
    );
    // Every line of the tree, in order; the numbered ones focusable nodes.
    assert_eq!(
        js(
            &s,
            "Array.from(document.querySelectorAll('#a11y-tree li')).map(n => n.textContent)"
        )
        .await,
        json!(
            RECORDED_TREE
                .lines()
                .map(str::trim_start)
                .collect::<Vec<_>>()
        )
    );
    assert_eq!(
        js(
            &s,
            "Array.from(document.querySelectorAll('#a11y-tree .a11y-node')).map(n => n.dataset.id)"
        )
        .await,
        json!(["3", "1", "2"])
    );
    // Depth shows as indentation.
    assert_eq!(
        js(
            &s,
            "(() => { const li = document.querySelectorAll('#a11y-tree li'); \
             return parseFloat(li[2].style.paddingLeft) > parseFloat(li[1].style.paddingLeft); })()"
        )
        .await,
        json!(true)
    );

    // Focusing a numbered line outlines its element on the screenshot; the keys still
    // move between steps with the focus in the tree.
    press(&mut s, "e").await;
    js(
        &s,
        "document.querySelector('#a11y-tree .a11y-node[data-id=\"1\"]').focus()",
    )
    .await;
    assert_eq!(
        js(
            &s,
            "Array.from(document.querySelectorAll('#overlay .el-box-hl')).map(b => b.dataset.id)"
        )
        .await,
        json!(["1"])
    );
    js(
        &s,
        "document.getElementById('a11y-details').scrollIntoView()",
    )
    .await;
    screenshot(&mut s, "replay-ax-tree").await;

    // The page's strings are text: nothing injected ran, no markup made it in.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(js(&s, "typeof window.__xss").await, json!("undefined"));
    assert_eq!(
        js(
            &s,
            "document.querySelectorAll('#a11y-tree img, #a11y-tree b').length"
        )
        .await,
        json!(0)
    );

    js(
        &s,
        "document.querySelector('#a11y-tree .a11y-node[data-id=\"1\"]').focus()",
    )
    .await;
    press(&mut s, "ArrowLeft").await;
    assert_eq!(
        js(&s, "document.getElementById('step-counter').textContent").await,
        json!("1 / 2")
    );
    assert_eq!(js(&s, source).await, json!("derived"));
    s.close().await;
    engine.shutdown().await;
}
