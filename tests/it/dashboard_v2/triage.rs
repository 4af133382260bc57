//! The triage page against the API, its examples, and its strings as text.

use super::*;

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn triage_shows_the_apis_counts_and_links_examples(pool: PgPool) {
    let engine = common::new_engine(pool.clone(), PolicyRegistry::builtin());
    let f = fixture(&engine, &pool).await;
    let ep = |t: &str, r: i32| f.episodes[&(t.to_string(), r)];
    let addr = serve_web(&engine).await;

    // The API's groups are the fixture's known results.
    let t = get(addr, &format!("/api/triage?campaign={}", f.campaign)).await;
    assert_eq!(
        t["totals"],
        json!({"episodes": 6, "finished": 5, "successes": 1, "failed": 1, "judge_errors": 1, "infra_errors": 2})
    );
    let reasons: BTreeMap<String, (i64, i64, i64, i64)> = t["end_reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let n = |k: &str| g[k].as_i64().unwrap();
            (
                g["end_reason"].as_str().unwrap().to_string(),
                (
                    n("episodes"),
                    n("successes"),
                    n("failures"),
                    n("judge_errors"),
                ),
            )
        })
        .collect();
    assert_eq!(
        reasons,
        BTreeMap::from([
            ("answered".into(), (3, 1, 1, 1)),
            ("max_steps".into(), (1, 0, 1, 0)),
            ("stopped".into(), (1, 0, 1, 0)),
        ])
    );
    let answered = t["end_reasons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["end_reason"] == "answered")
        .unwrap();
    assert_eq!(answered["examples"].as_array().unwrap().len(), 3);
    assert_ne!(
        answered["examples"][0],
        json!(ep("t-shop", 0)),
        "unsuccessful examples come first"
    );
    assert_eq!(
        t["infra_failures"],
        json!([
            {"kind": "browser_pool", "episodes": 1, "gave_up": 1, "finished": 0, "sample": HOSTILE_INFRA, "examples": [ep("t-wiki", 0)]},
            {"kind": "policy", "episodes": 1, "gave_up": 0, "finished": 1, "sample": "policy: backend unavailable", "examples": [ep("t-wiki", 1)]},
        ])
    );
    assert_eq!(t["judge_errors"][0]["kind"], HOSTILE_RUBRIC);
    let events: BTreeMap<String, (i64, i64, i64)> = t["page_events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let n = |k: &str| g[k].as_i64().unwrap();
            (
                format!(
                    "{} {}",
                    g["site"].as_str().unwrap(),
                    g["kind"].as_str().unwrap()
                ),
                (n("events"), n("steps"), n("episodes")),
            )
        })
        .collect();
    assert_eq!(
        events,
        BTreeMap::from([
            ("shop dialog".into(), (2, 1, 1)),
            ("shop blocked".into(), (1, 1, 1)),
            ("wiki download".into(), (1, 1, 1)),
            ("wiki script_stopped".into(), (1, 1, 1)),
        ])
    );
    assert_eq!(t["page_events"][0]["kind"], "dialog", "most frequent first");
    assert_eq!(t["page_events"][0]["sample"], HOSTILE_DIALOG);
    let facts: Vec<(String, String, i64, i64, i64)> = t["facts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["task_id"].as_str().unwrap().to_string(),
                g["fact_id"].as_str().unwrap().to_string(),
                g["failed"].as_i64().unwrap(),
                g["passed"].as_i64().unwrap(),
                g["unchecked"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        facts,
        vec![
            ("t-shop".into(), "g1.f2".into(), 2, 1, 0),
            ("t-shop".into(), "g1.f1".into(), 1, 2, 0),
            ("t-wiki".into(), "g1.f1".into(), 1, 0, 0),
        ],
        "the fact that fails most first"
    );
    assert_eq!(t["facts"][1]["description"], HOSTILE_FACT);
    // Across campaigns: the pending second campaign's two episodes count too.
    let all = get(addr, "/api/triage").await;
    assert_eq!(all["campaign"], Value::Null);
    assert_eq!(all["totals"]["episodes"], 8);
    assert_eq!(all["end_reasons"], t["end_reasons"]);
    let bad = reqwest::get(format!("http://{addr}/api/triage?campaign=nope"))
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let body: Value = bad.json().await.unwrap();
    assert_eq!(body["error"]["fields"][0]["field"], "campaign");
    let missing = reqwest::get(format!("http://{addr}/api/triage?campaign={}", Uuid::nil()))
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);

    // The page shows the same numbers.
    let mut s = engine.pool().await.unwrap().lease().await.unwrap();
    open_dashboard(&mut s, &format!("http://{addr}/#/campaigns/{}", f.campaign)).await;
    js(&s, "document.getElementById('btn-triage').click()").await;
    until(
        &s,
        "location.hash.startsWith('#/triage') && !!document.body && document.body.dataset.ready === '1' && !!document.getElementById('end-reasons')",
        "the campaign's Triage button opens its triage",
        Duration::from_secs(30),
    )
    .await;
    assert_eq!(
        js(&s, "document.getElementById('triage-scope').textContent").await,
        json!("known results")
    );
    for (id, want) in [
        ("triage-episodes", "6"),
        ("triage-finished", "5"),
        ("triage-failed", "1"),
        ("triage-infra", "2"),
        ("triage-judge-errors", "1"),
    ] {
        assert_eq!(
            js(
                &s,
                &format!("document.querySelector('#{id} .stat-value').textContent")
            )
            .await,
            json!(want),
            "{id}"
        );
    }
    let page = table(&s, "end-reasons").await;
    for g in t["end_reasons"].as_array().unwrap() {
        let row = &page[g["end_reason"].as_str().unwrap()];
        for k in ["episodes", "successes", "failures", "judge_errors"] {
            assert_eq!(
                row[format!("c-{}", k.replace('_', "-"))],
                json!(g[k].to_string()),
                "{} {k}",
                g["end_reason"]
            );
        }
    }
    let page = table(&s, "failing-facts").await;
    for g in t["facts"].as_array().unwrap() {
        let row = &page[format!(
            "{} {}",
            g["task_id"].as_str().unwrap(),
            g["fact_id"].as_str().unwrap()
        )];
        assert_eq!(row["c-failed"], json!(g["failed"].to_string()));
        assert_eq!(row["c-passed"], json!(g["passed"].to_string()));
        assert_eq!(
            row["c-description"], g["description"],
            "as text, not markup"
        );
    }
    let page = table(&s, "page-events").await;
    for g in t["page_events"].as_array().unwrap() {
        let row = &page[format!(
            "{} {}",
            g["site"].as_str().unwrap(),
            g["kind"].as_str().unwrap()
        )];
        assert_eq!(row["c-events"], json!(g["events"].to_string()));
        assert_eq!(row["c-episodes"], json!(g["episodes"].to_string()));
    }
    let page = table(&s, "infra-failures").await;
    assert_eq!(page["browser_pool"]["c-gave-up"], "1");
    assert_eq!(page["policy"]["c-finished"], "1");
    // Example links name the API's examples.
    let links = js(
        &s,
        "Array.from(document.querySelectorAll('#failing-facts tbody tr:first-child .example-link')).map(a => a.getAttribute('href'))",
    )
    .await;
    let want: Vec<String> = t["facts"][0]["examples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| format!("#/episodes/{}", id.as_str().unwrap()))
        .collect();
    assert_eq!(links, json!(want));
    // Strings from pages, tasks and models are text: nothing injected ran or rendered.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(js(&s, "typeof window.__xss").await, json!("undefined"));
    assert_eq!(
        js(
            &s,
            "document.querySelectorAll('#triage-body img, #triage-body script, #triage-body b').length"
        )
        .await,
        json!(0)
    );
    for text in [HOSTILE_FACT, HOSTILE_DIALOG, HOSTILE_INFRA, HOSTILE_RUBRIC] {
        assert_eq!(
            js(
                &s,
                &format!("document.body.innerText.includes({})", json!(text))
            )
            .await,
            json!(true),
            "{text} shown as text"
        );
    }
    screenshot(&mut s, "triage").await;

    // Keys: a focused row moves down with ↓ (focus drawn) and Enter opens its example.
    js(
        &s,
        "document.querySelector('#failing-facts tbody tr').focus()",
    )
    .await;
    press(&mut s, "ArrowDown").await;
    assert_eq!(
        js(
            &s,
            "document.activeElement === document.querySelectorAll('#failing-facts tbody tr')[1]"
        )
        .await,
        json!(true)
    );
    assert_eq!(
        js(
            &s,
            "document.activeElement.matches(':focus-visible') && getComputedStyle(document.activeElement).outlineStyle"
        )
        .await,
        json!("solid"),
        "focus is visible"
    );
    let second = t["facts"][1]["examples"][0].as_str().unwrap().to_string();
    press(&mut s, "Enter").await;
    until(
        &s,
        &format!(
            "location.hash === '#/episodes/{second}' && !!document.body && document.body.dataset.ready === '1' && !!document.getElementById('outcome')"
        ),
        "Enter opens the row's example episode",
        Duration::from_secs(30),
    )
    .await;

    // Every campaign's triage from the nav.
    js(&s, "document.getElementById('nav-triage').click()").await;
    until(
        &s,
        "location.hash === '#/triage' && !!document.querySelector('#triage-episodes .stat-value')",
        "the nav's triage",
        Duration::from_secs(30),
    )
    .await;
    until(
        &s,
        "document.querySelector('#triage-episodes .stat-value').textContent === '8'",
        "every campaign's episodes",
        Duration::from_secs(30),
    )
    .await;
    s.close().await;
    engine.shutdown().await;
}
