//! Model policies in real campaigns on a bundled site: the ONNX policy (tiny generated VLM,
//! real ONNX Runtime, batched through the engine's queue), the HTTP policy against
//! `serve-policy` (a real OpenAI-compatible server over the same model), and the HTTP
//! policy against a server that is down. `scripts/setup-python.sh` provides the model.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use engine::CampaignSpec;
use inference::server::{Batching, PolicyServer};
use policy::http::{HttpOptions, HttpPolicy};
use policy::onnx::{self, OnnxBackend, OnnxOptions};
use policy::output::{Grounding, parse_output};
use policy::{BatchLimits, PolicyRegistry};
use sqlx::PgPool;
use store::{EpisodeFilter, Store, TaskFilter};
use uuid::Uuid;

fn onnx_options() -> OnnxOptions {
    let data = common::data_dir();
    let dylib =
        inference::find_ort_dylib(&data).expect("ONNX Runtime: run ./scripts/setup-python.sh");
    let mut o = OnnxOptions::new(data.join("models/tiny-vlm"), dylib);
    o.generation.max_new_tokens = 16;
    o
}

/// Steps of a campaign: all, with a logprob, with token logprobs, with token ids paired
/// one to one with them.
async fn steps_with_logprobs(store: &Store, campaign: Uuid) -> (i64, i64, i64, i64) {
    sqlx::query_as(
        "SELECT count(*), count(s.logprob), count(*) FILTER (WHERE cardinality(s.token_logprobs) > 0),
            count(*) FILTER (WHERE cardinality(s.token_ids) = cardinality(s.token_logprobs))
         FROM steps s JOIN episodes e ON e.id = s.episode_id WHERE e.campaign_id = $1",
    )
    .bind(campaign)
    .fetch_one(store.pool())
    .await
    .unwrap()
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn onnx_and_http_policies_run_campaigns_end_to_end(pool: PgPool) {
    let sites = common::sites().await;

    // serve-policy over the tiny model.
    let server_backend = OnnxBackend::load(onnx_options()).unwrap();
    let server_model = server_backend.model();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server =
        inference::server::PolicyServer::start(server_backend.model(), "tiny", Default::default())
            .unwrap();
    let app = inference::server::router(server);
    tokio::spawn(async move { axum::serve(listener, app).await });

    let mut policies = PolicyRegistry::builtin();
    let (onnx_policy, _) = onnx::policy(
        "onnx",
        onnx_options(),
        BatchLimits {
            max_batch: 4,
            max_wait: Duration::from_millis(20),
        },
    )
    .unwrap();
    policies.register(Arc::new(onnx_policy));
    let mut http = HttpOptions::new(format!("http://{addr}"), "tiny");
    http.max_tokens = 16;
    policies.register(Arc::new(HttpPolicy::new("http", http).unwrap()));
    let mut down = HttpOptions::new("http://127.0.0.1:9", "nothing");
    down.retries = 1;
    down.timeout = Duration::from_secs(2);
    policies.register(Arc::new(HttpPolicy::new("http-down", down).unwrap()));

    let engine = common::new_engine(pool, policies);
    engine.register_bundled(sites.bases()).await.unwrap();
    let spec = |policy: &str| CampaignSpec {
        policy: Some(policy.into()),
        max_steps: Some(3),
        max_attempts: Some(1),
        tasks: Some(TaskFilter {
            site: Some("wiki".into()),
            difficulty: Some("easy".into()),
            ..Default::default()
        }),
        ..Default::default()
    };

    for policy in ["onnx", "http"] {
        let id = engine.create_campaign(spec(policy)).await.unwrap();
        assert_eq!(
            engine.run_campaign(id).await.unwrap(),
            store::Status::Completed,
            "{policy}"
        );
        let v = engine.store().get_campaign(id).await.unwrap().unwrap();
        assert_eq!(
            (v.counts.finished, v.counts.failed),
            (v.total_episodes, 0),
            "{policy}: every episode ran and was judged"
        );
        let (steps, with_logprob, with_tokens, with_ids) =
            steps_with_logprobs(engine.store(), id).await;
        assert!(steps > 0);
        assert_eq!(
            (with_logprob, with_tokens, with_ids),
            (steps, steps, steps),
            "{policy}: every step stores the action's log-probabilities and token ids"
        );
        let (eps, _) = engine
            .store()
            .list_episodes(&EpisodeFilter::campaign(id), 100, 0)
            .await
            .unwrap();
        let detail = engine
            .store()
            .get_episode(eps[0].id)
            .await
            .unwrap()
            .unwrap();
        // Which model, at which settings, produced these steps.
        let card = detail
            .policy
            .clone()
            .expect("the episode records its policy");
        assert_eq!(
            (card.name.as_str(), card.backend.as_str()),
            (policy, policy)
        );
        let sampling = card.sampling.expect("sampling settings");
        assert_eq!((sampling.temperature, sampling.top_p), (0.0, 1.0));
        assert_eq!(card.settings["grounding"], "marks", "{policy}");
        if policy == "onnx" {
            let o = onnx_options();
            assert_eq!(card.model.as_deref(), Some("tiny-vlm"));
            assert_eq!(
                card.fingerprint,
                Some(policy::fingerprint(&o.model_dir).unwrap()),
                "the fingerprint of the files it loaded"
            );
            assert_eq!(sampling.max_tokens, 16);
            assert_eq!(card.settings["provider"], "CPU");
        } else {
            assert_eq!(card.model.as_deref(), Some("tiny"));
            assert_eq!(card.endpoint, Some(format!("http://{addr}")));
            assert_eq!(
                card.fingerprint, None,
                "a remote model's files are not ours to read"
            );
        }
        assert!(
            detail.steps.iter().all(|s| s.core.raw_output.is_some()),
            "{policy}: the model's text is kept"
        );
        assert!(
            detail.steps.iter().all(|s| s
                .core
                .prompt
                .as_deref()
                .is_some_and(|p| p.contains(&detail.instruction))),
            "{policy}: and the prompt it answered"
        );
        // A random-weight model writes nonsense, so whether a step acted depends on the
        // weights; what must hold is that every step's outcome is the shared parser's verdict
        // on the text the model wrote (policy/tests/it/http.rs checks a valid completion through
        // the same client with a server whose reply is fixed).
        for s in detail.steps.iter().map(|s| &s.core) {
            let raw = s.raw_output.as_deref().unwrap_or_default();
            let (_, parsed) = parse_output(raw, Grounding::Marks, (1280, 720));
            match parsed {
                Err(e) => assert_eq!(
                    s.action_error.as_deref(),
                    Some(e.as_str()),
                    "{policy}: {raw:?}"
                ),
                Ok(a) => assert!(
                    s.action == a.to_string() || s.action_error.is_some(),
                    "{policy}: {raw:?} parsed as {a} but the step says {:?}",
                    s.action
                ),
            }
        }
    }

    let id = engine.create_campaign(spec("http-down")).await.unwrap();
    assert_eq!(
        engine.run_campaign(id).await.unwrap(),
        store::Status::Completed
    );
    let v = engine.store().get_campaign(id).await.unwrap().unwrap();
    assert_eq!(
        (v.counts.failed, v.counts.finished),
        (v.total_episodes, 0),
        "a dead policy server is an infrastructure failure"
    );
    let (eps, _) = engine
        .store()
        .list_episodes(&EpisodeFilter::campaign(id), 100, 0)
        .await
        .unwrap();
    assert!(eps.iter().all(|e| {
        e.last_error
            .as_deref()
            .unwrap()
            .starts_with("policy_unavailable")
    }));

    // The server answers malformed requests as OpenAI does, naming the parameter.
    let client = reqwest::Client::new();
    let url = format!("http://{addr}/v1/chat/completions");
    let bad = client
        .post(&url)
        .json(&serde_json::json!({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x/y.png"}}]}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let body: serde_json::Value = bad.json().await.unwrap();
    assert_eq!(
        body["error"]["param"],
        "messages[0].content[0].image_url.url"
    );
    for (body, param) in [
        (serde_json::json!({"messages": []}), "messages"),
        (
            serde_json::json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 0}),
            "max_tokens",
        ),
        (
            serde_json::json!({"messages": [{"role": "robot", "content": "hi"}]}),
            "messages[0].role",
        ),
    ] {
        let r = client.post(&url).json(&body).send().await.unwrap();
        assert_eq!(r.status(), 400, "{body}");
        assert_eq!(
            r.json::<serde_json::Value>().await.unwrap()["error"]["param"],
            param
        );
    }
    let ok: serde_json::Value = client
        .post(&url)
        .json(&serde_json::json!({"messages": [{"role": "user", "content": "Say hi"}], "max_tokens": 5, "logprobs": true}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ok["object"], "chat.completion");
    let n = ok["usage"]["completion_tokens"].as_u64().unwrap();
    assert!(n <= 5, "{ok}");
    let logprobs = ok["choices"][0]["logprobs"]["content"].as_array().unwrap();
    assert_eq!(
        logprobs.len() as u64,
        n,
        "one log-probability per generated token"
    );
    assert!(
        logprobs
            .iter()
            .all(|l| l["logprob"].as_f64().is_some_and(|v| v <= 0.0))
    );
    // Tokens are reported by their text (OpenAI's form), or as `token_id:<id>` when asked
    // (vLLM's `return_tokens_as_token_ids`): the same greedy generation both ways.
    let greedy = |ids: bool| {
        serde_json::json!({"messages": [{"role": "user", "content": "Say hi"}], "max_tokens": 6,
            "temperature": 0.0, "logprobs": true, "return_tokens_as_token_ids": ids})
    };
    let tokens = |v: &serde_json::Value| -> Vec<String> {
        v["choices"][0]["logprobs"]["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["token"].as_str().unwrap().to_string())
            .collect()
    };
    let reply = |ids: bool| {
        let request = client.post(&url).json(&greedy(ids));
        async move {
            let r = request.send().await.unwrap();
            r.json::<serde_json::Value>().await.unwrap()
        }
    };
    let (as_text, as_ids) = (reply(false).await, reply(true).await);
    let ids: Vec<u32> = tokens(&as_ids)
        .iter()
        .map(|t| t.strip_prefix("token_id:").unwrap().parse().unwrap())
        .collect();
    assert!(!ids.is_empty());
    let texts: Vec<String> = {
        let model = server_model.lock().unwrap();
        ids.iter().map(|&id| model.token_text(id)).collect()
    };
    assert_eq!(tokens(&as_text), texts, "each token's own text");
    engine.shutdown().await;
}

/// One chat completion from `serve-policy`: the text and its per-token log-probabilities.
async fn complete(
    client: &reqwest::Client,
    url: &str,
    body: serde_json::Value,
) -> (String, Vec<f64>) {
    let r = client.post(url).json(&body).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let v: serde_json::Value = r.json().await.unwrap();
    let choice = &v["choices"][0];
    let logprobs = choice["logprobs"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["logprob"].as_f64().unwrap())
        .collect();
    (
        choice["message"]["content"].as_str().unwrap().to_string(),
        logprobs,
    )
}

/// `serve-policy` on the tiny model on a free port: the server (for its stats) and its chat
/// completions URL.
async fn serve_policy(batching: Batching) -> (PolicyServer, String) {
    let backend = OnnxBackend::load(onnx_options()).unwrap();
    let server = PolicyServer::start(backend.model(), "tiny", batching).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://{}/v1/chat/completions",
        listener.local_addr().unwrap()
    );
    let app = inference::server::router(server.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (server, url)
}

#[tokio::test]
async fn serve_policy_batches_concurrent_requests_and_answers_each_as_if_alone() {
    let (stats, url) = serve_policy(Batching {
        max_batch: 8,
        // Long enough that six concurrent requests all arrive within it, however busy the
        // machine.
        max_wait: Duration::from_secs(1),
        queue_capacity: 64,
    })
    .await;
    let client = reqwest::Client::new();
    // Prompts of different lengths, so the batch is padded.
    let body = |i: usize, max_tokens: u32| {
        serde_json::json!({"model": "tiny", "max_tokens": max_tokens, "temperature": 0.0,
            "logprobs": true, "seed": i,
            "messages": [{"role": "user", "content": format!("Task {i}: {}", "open the page ".repeat(i + 1))}]})
    };

    let mut alone = Vec::new();
    for i in 0..6 {
        alone.push(complete(&client, &url, body(i, 8)).await);
    }
    assert_eq!(
        (stats.stats().batches(), stats.stats().largest()),
        (6, 1),
        "one at a time, each request is its own batch"
    );

    let together =
        futures::future::join_all((0..6).map(|i| complete(&client, &url, body(i, 8)))).await;
    let batches = stats.stats().batches() - 6;
    assert!(
        batches < 6 && stats.stats().largest() >= 2,
        "six concurrent requests ran in {batches} generation calls (largest {})",
        stats.stats().largest()
    );
    assert_eq!(stats.stats().requests(), 12);
    for (i, ((a_text, a_lp), (t_text, t_lp))) in alone.iter().zip(&together).enumerate() {
        assert_eq!(
            a_text, t_text,
            "request {i}: batched text equals its text alone"
        );
        assert_eq!(a_lp.len(), t_lp.len());
        for (a, t) in a_lp.iter().zip(t_lp) {
            assert!(
                (a - t).abs() < 1e-3,
                "request {i}: logprob {a} alone, {t} batched"
            );
        }
    }

    // Different settings never share a generation call: each gets what it asked for.
    let before = stats.stats().batches();
    let (short, long) = tokio::join!(
        complete(&client, &url, body(0, 2)),
        complete(&client, &url, body(1, 8))
    );
    assert_eq!(stats.stats().batches() - before, 2);
    assert!(short.1.len() <= 2, "{short:?}");
    assert_eq!(long, alone[1]);
}

/// A queue that is full answers 503 at once (with `Retry-After`, the error typed as
/// `server_busy`) instead of piling up work, loses none of the requests it accepted, and
/// keeps answering once the storm has passed.
#[tokio::test]
async fn serve_policy_refuses_requests_beyond_its_queue_with_503() {
    // One generating, one waiting: the third concurrent request finds the queue full.
    let (stats, url) = serve_policy(Batching {
        max_batch: 1,
        max_wait: Duration::ZERO,
        queue_capacity: 1,
    })
    .await;
    let client = reqwest::Client::new();
    let body = |i: usize| {
        serde_json::json!({"model": "tiny", "max_tokens": 32, "temperature": 0.0, "seed": i, "logprobs": true,
            "messages": [{"role": "user", "content": format!("Task {i}: open the page")}]})
    };

    let storm =
        futures::future::join_all((0..8).map(|i| client.post(&url).json(&body(i)).send())).await;
    let (mut ok, mut busy) = (0, 0);
    for r in storm {
        let r = r.unwrap();
        match r.status().as_u16() {
            200 => ok += 1,
            503 => {
                busy += 1;
                assert_eq!(r.headers()["retry-after"], "1");
                let v: serde_json::Value = r.json().await.unwrap();
                assert_eq!(v["error"]["type"], "server_busy");
                let message = v["error"]["message"].as_str().unwrap();
                assert!(message.contains("retry later"), "{message}");
            }
            other => panic!("unexpected status {other}"),
        }
    }
    assert!(
        busy >= 1 && ok >= 1,
        "8 requests at once against a queue of 1: {ok} answered, {busy} refused"
    );
    assert_eq!(
        stats.stats().requests(),
        ok,
        "every accepted request was generated, no refused one was"
    );
    let (text, _) = complete(&client, &url, body(0)).await;
    assert!(!text.is_empty());
}

/// A page of `n` buttons with a plain screenshot, as the HTTP policy would be shown it.
fn button_page(n: u32) -> browser_pool::Observation {
    let mut jpeg = Vec::new();
    image::RgbImage::from_pixel(1280, 720, image::Rgb([200, 210, 220]))
        .write_to(
            &mut std::io::Cursor::new(&mut jpeg),
            image::ImageFormat::Jpeg,
        )
        .unwrap();
    browser_pool::Observation {
        url: "http://127.0.0.1:1/".into(),
        title: "Buttons".into(),
        screenshot: browser_pool::Screenshot {
            bytes: jpeg,
            mime: "image/jpeg",
            width: 1280,
            height: 720,
            scale: 1.0,
        },
        elements: (1..=n)
            .map(|id| browser_pool::Element {
                id,
                tag: "button".into(),
                role: "button".into(),
                label: format!("Button {id}"),
                in_viewport: true,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// Guided decoding over HTTP: the HTTP policy sends the observation's action grammar as
/// `guided_regex` (vLLM's parameter) and `serve-policy` holds the model to it, so even the
/// random-weight model answers with actions on the page; a regex the server cannot compile
/// is a 400 naming the parameter.
#[tokio::test]
async fn guided_decoding_over_http_yields_only_actions_of_the_page() {
    use inference::grammar::{ActionGrammar, action_pattern};
    use policy::Policy;
    use policy::output::check_elements;

    let (_server, url) = serve_policy(Batching::default()).await;
    let base = url.trim_end_matches("/v1/chat/completions").to_string();
    let opts = |constrained: bool| {
        let mut o = HttpOptions::new(base.clone(), "tiny");
        o.max_tokens = 24;
        o.temperature = 1.0;
        o.constrained = constrained.then_some(inference::grammar::Constraint::Action);
        o
    };
    let guided = HttpPolicy::new("http", opts(true)).unwrap();
    let free = HttpPolicy::new("http", opts(false)).unwrap();
    let task = Arc::new(
        tasks::parse_task(
            &serde_json::json!({"id": "t", "instruction": "Press button 3", "start_url": "http://127.0.0.1:1/",
                "rubric": {"groups": [{"facts": [{"check": {"type": "url", "prefix": "http"}}]}]}})
            .to_string(),
        )
        .unwrap(),
    );
    let page = Arc::new(button_page(4));
    let pattern = action_pattern(&page, Grounding::Marks);
    let (mut parsed, mut free_parsed) = (0, 0);
    for seed in 0..10u64 {
        let input = policy::StepInput {
            instruction: task.instruction.as_str().into(),
            task: task.clone(),
            observation: page.clone(),
            history: Arc::from(Vec::new()),
            step: 0,
            max_steps: 5,
            seed,
            answered: None,
        };
        let d = guided.decide(input.clone()).await.unwrap();
        assert!(
            ActionGrammar::new(&pattern)
                .unwrap()
                .advance(d.raw_output.as_bytes()),
            "seed {seed}: {:?} is not an action's beginning",
            d.raw_output
        );
        if let Ok(action) = d.action {
            parsed += 1;
            check_elements(action, &page.elements).unwrap();
        }
        free_parsed += usize::from(free.decide(input).await.unwrap().action.is_ok());
    }
    assert!(
        parsed >= 3,
        "only {parsed} of 10 guided outputs were whole actions"
    );
    assert!(
        free_parsed < parsed,
        "unguided {free_parsed}, guided {parsed}"
    );

    let client = reqwest::Client::new();
    for (extra, param) in [
        (
            serde_json::json!({"guided_regex": "click(("}),
            "guided_regex",
        ),
        (
            serde_json::json!({"structured_outputs": {"json": {}}}),
            "structured_outputs",
        ),
    ] {
        let mut body = serde_json::json!({"messages": [{"role": "user", "content": "hi"}]});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let r = client.post(&url).json(&body).send().await.unwrap();
        assert_eq!(r.status(), 400, "{body}");
        assert_eq!(
            r.json::<serde_json::Value>().await.unwrap()["error"]["param"],
            param
        );
    }
}

/// A text-only model behind `serve-policy` (tiny-text, which refuses image parts): the HTTP
/// policy told the model reads no images sends none and lists the page's elements, and
/// its steps say so; told nothing, it sends screenshots, and every request is refused.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_text_only_http_policy_sends_a_text_model_no_images(pool: PgPool) {
    let sites = common::sites().await;
    let mut o = onnx_options();
    o.model_dir = common::data_dir().join("models/tiny-text");
    let backend = OnnxBackend::load(o).unwrap();
    let server = PolicyServer::start(backend.model(), "tiny-text", Default::default()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = inference::server::router(server);
    tokio::spawn(async move { axum::serve(listener, app).await });

    let mut policies = PolicyRegistry::builtin();
    for (name, vision) in [("text", false), ("images", true)] {
        let mut h = HttpOptions::new(base.clone(), "tiny-text");
        h.max_tokens = 16;
        h.vision = vision;
        h.retries = 0;
        policies.register(Arc::new(HttpPolicy::new(name, h).unwrap()));
    }
    let engine = common::new_engine(pool, policies);
    engine.register_bundled(sites.bases()).await.unwrap();
    let run = |policy: &str| {
        let spec = CampaignSpec {
            policy: Some(policy.into()),
            max_steps: Some(2),
            max_attempts: Some(1),
            tasks: Some(TaskFilter {
                ids: vec!["wiki-aster-length".into()],
                ..Default::default()
            }),
            ..Default::default()
        };
        let engine = &engine;
        async move {
            let id = engine.create_campaign(spec).await.unwrap();
            assert_eq!(
                engine.run_campaign(id).await.unwrap(),
                store::Status::Completed
            );
            common::first_episode(engine, id).await
        }
    };
    let text = run("text").await;
    assert!(!text.steps.is_empty());
    for s in &text.steps {
        let prompt = s.core.prompt.as_deref().unwrap();
        assert!(
            prompt.contains("Interactive elements:\n"),
            "the elements listed: {prompt}"
        );
        assert!(
            s.core.raw_output.is_some() && s.token_ids.as_ref().is_some_and(|t| !t.is_empty()),
            "the model answered: {:?}",
            s.core
        );
    }
    assert_eq!(text.policy.unwrap().settings["vision"], false);
    let images = run("images").await;
    assert!(!images.steps.is_empty());
    for s in &images.steps {
        let why = s.core.action_error.as_deref().unwrap_or_default();
        assert!(
            why.contains("this model reads no images") && s.core.action.is_empty(),
            "a text model refuses screenshots: {why}"
        );
    }
}
