//! The OpenAI-compatible HTTP client and policy against a real local axum server that
//! speaks the chat-completions protocol with scripted status codes and delays: retries with
//! backoff on 429 and 5xx, no retry on other refusals, timeouts, the limit on requests in
//! flight, and a completion's action, log-probabilities and token ids reaching the decision
//! (and a server that refuses the token-id parameter, as hosted APIs do).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use browser_pool::{Action, Element, Observation, Rect, Screenshot, Target};
use policy::http::{ChatClient, HttpOptions, HttpPolicy};
use policy::output::Grounding;
use policy::{Policy, PolicyError, StepInput};
use serde_json::{Value, json};

/// What the server answers, request by request: `(status, delay)`; 200 when the script is
/// exhausted.
#[derive(Clone, Default)]
struct Server {
    script: Arc<Mutex<VecDeque<(u16, u64)>>>,
    reply: Arc<Mutex<String>>,
    logprobs: Arc<Mutex<Vec<f64>>>,
    arrivals: Arc<Mutex<Vec<Instant>>>,
    bodies: Arc<Mutex<Vec<Value>>>,
    in_flight: Arc<AtomicUsize>,
    most_in_flight: Arc<AtomicUsize>,
    /// Answers a request carrying `return_tokens_as_token_ids` with 400, the way hosted
    /// APIs refuse fields they do not know.
    refuse_ids: Arc<AtomicBool>,
}

/// Counts a request out even when the client gave up on it and the handler was dropped.
struct InFlight(Arc<AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn chat(State(s): State<Server>, Json(body): Json<Value>) -> Response {
    s.arrivals.lock().unwrap().push(Instant::now());
    let ids = body["return_tokens_as_token_ids"] == true;
    s.bodies.lock().unwrap().push(body);
    let now = s.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    let _guard = InFlight(s.in_flight.clone());
    s.most_in_flight.fetch_max(now, Ordering::SeqCst);
    if ids && s.refuse_ids.load(Ordering::SeqCst) {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": {"message": "Unrecognized request argument supplied: return_tokens_as_token_ids",
                "type": "invalid_request_error", "param": null}})),
        )
            .into_response();
    }
    let (status, delay) = s.script.lock().unwrap().pop_front().unwrap_or((200, 0));
    tokio::time::sleep(Duration::from_millis(delay)).await;
    if status != 200 {
        let code = StatusCode::from_u16(status).unwrap();
        return (
            code,
            Json(json!({"error": {"message": "scripted refusal"}})),
        )
            .into_response();
    }
    let text = s.reply.lock().unwrap().clone();
    let logprobs: Vec<Value> = s
        .logprobs
        .lock()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, l)| {
            // vLLM's spelling when asked for ids; the token's text otherwise.
            let token = if ids {
                format!("token_id:{}", 100 + i)
            } else {
                format!("t{i}")
            };
            json!({"token": token, "logprob": l, "top_logprobs": []})
        })
        .collect();
    Json(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "scripted",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": "stop", "logprobs": {"content": logprobs}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}
    }))
    .into_response()
}

async fn start(script: &[(u16, u64)]) -> (Server, String) {
    let server = Server::default();
    server.script.lock().unwrap().extend(script.iter().copied());
    *server.reply.lock().unwrap() = "ok".into();
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .with_state(server.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (server, format!("http://{addr}"))
}

fn client(base: &str, retries: u32, timeout_ms: u64, concurrency: usize) -> ChatClient {
    let mut o = HttpOptions::new(base, "scripted");
    o.retries = retries;
    o.timeout = Duration::from_millis(timeout_ms);
    o.concurrency = concurrency;
    ChatClient::new(o).unwrap()
}

fn text(t: &str) -> Vec<Value> {
    vec![json!({"type": "text", "text": t})]
}

#[tokio::test]
async fn overload_and_server_errors_are_retried_with_growing_backoff() {
    let (server, base) = start(&[(429, 0), (503, 0), (500, 0)]).await;
    let reply = client(&base, 3, 5000, 4)
        .complete(text("hi"), 1)
        .await
        .unwrap();
    assert_eq!(reply.text, "ok");
    let t = server.arrivals.lock().unwrap().clone();
    assert_eq!(t.len(), 4, "three refusals, then the answer");
    let gaps: Vec<Duration> = t.windows(2).map(|w| w[1] - w[0]).collect();
    for (gap, at_least) in gaps.iter().zip([500, 1000, 2000]) {
        assert!(
            *gap >= Duration::from_millis(at_least - 20),
            "backoff grows: {gaps:?}"
        );
    }
    // Bounded (the waits are milliseconds, not seconds, and capped): a hang guard that a
    // busy machine does not reach. The exact schedule is the lower bounds above.
    assert!(gaps[2] < Duration::from_secs(20), "{gaps:?}");
}

#[tokio::test]
async fn exhausted_retries_are_unavailable_and_client_errors_are_not_retried() {
    let (server, base) = start(&[(502, 0), (503, 0), (503, 0)]).await;
    let err = client(&base, 1, 5000, 4)
        .complete(text("hi"), 1)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, PolicyError::Unavailable(m) if m.contains("2 tries") && m.contains("503")),
        "{err:?}"
    );
    assert_eq!(server.arrivals.lock().unwrap().len(), 2);

    let (server, base) = start(&[(400, 0), (200, 0)]).await;
    let err = client(&base, 3, 5000, 4)
        .complete(text("hi"), 1)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, PolicyError::Failed(m) if m.contains("400")),
        "{err:?}"
    );
    assert_eq!(
        server.arrivals.lock().unwrap().len(),
        1,
        "a refused request is not retried"
    );
}

#[tokio::test]
async fn a_slow_server_times_out_and_is_retried() {
    let (server, base) = start(&[(200, 60_000), (200, 60_000)]).await;
    let t = Instant::now();
    let err = client(&base, 1, 300, 4)
        .complete(text("hi"), 1)
        .await
        .unwrap_err();
    let took = t.elapsed();
    assert!(
        matches!(&err, PolicyError::Unavailable(m) if m.contains("timed out")),
        "{err:?}"
    );
    assert_eq!(server.arrivals.lock().unwrap().len(), 2);
    // Two 300 ms timeouts and a 500 ms backoff, not the server's minute.
    assert!(
        took >= Duration::from_millis(1000) && took < Duration::from_secs(20),
        "{took:?}"
    );

    // A reply within the limit is fine.
    let (_, base) = start(&[(200, 100)]).await;
    assert!(
        client(&base, 0, 1000, 4)
            .complete(text("hi"), 1)
            .await
            .is_ok()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_in_flight_never_exceed_the_limit() {
    let (server, base) = start(&[(200, 300); 6]).await;
    let chat = Arc::new(client(&base, 0, 5000, 2));
    let t = Instant::now();
    let replies = futures::future::join_all((0..6).map(|i| {
        let chat = chat.clone();
        async move { chat.complete(text("hi"), i).await }
    }))
    .await;
    assert!(replies.iter().all(Result::is_ok));
    assert_eq!(server.most_in_flight.load(Ordering::SeqCst), 2);
    assert_eq!(server.arrivals.lock().unwrap().len(), 6);
    assert!(
        t.elapsed() >= Duration::from_millis(850),
        "6 requests of 300 ms, 2 at a time, take three rounds: {:?}",
        t.elapsed()
    );
}

fn observation() -> Observation {
    let img = image::RgbImage::from_pixel(64, 36, image::Rgb([200, 10, 10]));
    let mut png = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    let button = |id: u32| Element {
        id,
        tag: "button".into(),
        role: "button".into(),
        label: format!("Button {id}"),
        bbox: Rect {
            x: 5.0 * f64::from(id),
            y: 5.0,
            width: 4.0,
            height: 4.0,
        },
        in_viewport: true,
        ..Element::default()
    };
    Observation {
        url: "http://127.0.0.1:1/".into(),
        title: "Page".into(),
        screenshot: Screenshot {
            bytes: png,
            mime: "image/png",
            width: 64,
            height: 36,
            scale: 1.0,
        },
        elements: vec![button(1), button(2)],
        ..Default::default()
    }
}

/// The first step of a one-fact task asking `instruction`, on `observation`.
fn first_step(instruction: &str, observation: Observation) -> StepInput {
    let spec = json!({"id": "t", "instruction": instruction, "start_url": "http://127.0.0.1:1/",
        "rubric": {"groups": [{"facts": [{"check": {"type": "url", "prefix": "http"}}]}]}});
    StepInput {
        instruction: instruction.into(),
        task: Arc::new(tasks::parse_task(&spec.to_string()).unwrap()),
        observation: Arc::new(observation),
        history: Arc::from(Vec::new()),
        step: 0,
        max_steps: 5,
        seed: 3,
        answered: None,
    }
}

#[tokio::test]
async fn the_policy_parses_the_completion_and_keeps_its_logprobs() {
    let (server, base) = start(&[(503, 0)]).await;
    *server.reply.lock().unwrap() = "The second button opens the cart.\nAction: click(2)".into();
    *server.logprobs.lock().unwrap() = vec![-0.5, -0.25, -0.125];
    let mut o = HttpOptions::new(base, "scripted");
    o.retries = 1;
    let mut once = o.clone();
    once.retries = 0;
    assert!(
        !HttpPolicy::new("once", once).unwrap().retries_own_calls(),
        "without client retries, the episode's retries apply"
    );
    let policy = HttpPolicy::new("http", o).unwrap();
    // The client retried the 503 itself (the first reply below); the episode must not
    // retry on top.
    assert!(policy.retries_own_calls());
    let d = policy
        .decide(first_step("Open the cart", observation()))
        .await
        .unwrap();
    assert_eq!(d.action, Ok(Action::Click(Target::Element(2))));
    assert_eq!(
        d.thought.as_deref(),
        Some("The second button opens the cart.")
    );
    assert_eq!(d.token_logprobs, vec![-0.5, -0.25, -0.125]);
    assert_eq!(d.token_ids, vec![100, 101, 102]);
    assert_eq!(d.logprob, Some(-0.875));

    // What went over the wire: the screenshot as a JPEG data URL, the prompt, logprobs and
    // token ids asked.
    let bodies = server.bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2, "the 503 was retried");
    let body = &bodies[1];
    assert_eq!(body["model"], "scripted");
    assert_eq!(body["logprobs"], true);
    assert_eq!(body["return_tokens_as_token_ids"], true);
    let parts = body["messages"][0]["content"].as_array().unwrap();
    let url = parts[0]["image_url"]["url"].as_str().unwrap();
    let jpeg = base64::Engine::decode(
        &base64::engine::general_purpose::STANDARD,
        url.strip_prefix("data:image/jpeg;base64,").unwrap(),
    )
    .unwrap();
    let img = image::load_from_memory(&jpeg).unwrap();
    assert_eq!((img.width(), img.height()), (64, 36));
    let prompt = parts[1]["text"].as_str().unwrap();
    assert!(
        prompt.contains("Task: Open the cart") && prompt.contains("[2] button \"Button 2\""),
        "{prompt}"
    );
    assert_eq!(
        d.prompt.as_deref(),
        Some(prompt),
        "the decision keeps the text sent"
    );
}

/// A server that refuses `return_tokens_as_token_ids` (hosted APIs reject unknown fields) is
/// asked again without it and not asked again; the step keeps its log-probabilities. A
/// judge never asks for ids.
#[tokio::test]
async fn a_server_refusing_token_ids_is_asked_without_them() {
    let (server, base) = start(&[]).await;
    server.refuse_ids.store(true, Ordering::SeqCst);
    *server.reply.lock().unwrap() = "Action: click(2)".into();
    *server.logprobs.lock().unwrap() = vec![-0.5, -0.25];
    let mut o = HttpOptions::new(base.clone(), "scripted");
    o.retries = 0;
    let policy = HttpPolicy::new("http", o).unwrap();
    for round in 0..2 {
        let d = policy
            .decide(first_step("Open the cart", observation()))
            .await
            .unwrap();
        assert_eq!(d.action, Ok(Action::Click(Target::Element(2))), "{round}");
        assert_eq!(d.token_logprobs, vec![-0.5, -0.25], "{round}");
        assert!(
            d.token_ids.is_empty(),
            "{round}: no ids without the parameter"
        );
    }
    let asked: Vec<bool> = server
        .bodies
        .lock()
        .unwrap()
        .iter()
        .map(|b| b.get("return_tokens_as_token_ids").is_some())
        .collect();
    assert_eq!(
        asked,
        [true, false, false],
        "refused once, asked again without, then never asked"
    );

    // Other 400s stay errors, not silently retried without the parameter.
    let (server, base) = start(&[(400, 0)]).await;
    let mut o = HttpOptions::new(base, "scripted");
    o.retries = 0;
    let err = HttpPolicy::new("http", o)
        .unwrap()
        .decide(first_step("Open the cart", observation()))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, PolicyError::Failed(m) if m.contains("400")),
        "{err:?}"
    );
    assert_eq!(server.arrivals.lock().unwrap().len(), 1);

    // A judge's (plain) completion does not ask.
    let (server, base) = start(&[]).await;
    client(&base, 0, 5000, 1)
        .complete(text("hi"), 1)
        .await
        .unwrap();
    assert!(
        server.bodies.lock().unwrap()[0]
            .get("return_tokens_as_token_ids")
            .is_none()
    );
}

/// A coordinates agent's 0-1000 grid maps onto the viewport the observation shows (a
/// campaign's screen can be any size), not a fixed 1280x720.
#[tokio::test]
async fn grid_coordinates_map_onto_the_observed_viewport() {
    let (server, base) = start(&[]).await;
    *server.reply.lock().unwrap() = "click(500, 250)".into();
    let mut o = HttpOptions::new(base, "scripted");
    o.prompt.grounding = Grounding::Coordinates;
    let policy = HttpPolicy::new("http", o).unwrap();
    // 64x36 CSS pixels, captured at 1x and at 2x (a high-DPI screen): the same viewport.
    for scale in [1.0, 2.0] {
        let mut obs = observation();
        obs.screenshot.width = (64.0 * scale) as u32;
        obs.screenshot.height = (36.0 * scale) as u32;
        obs.screenshot.scale = scale;
        let d = policy.decide(first_step("Click", obs)).await.unwrap();
        assert_eq!(
            d.action,
            Ok(Action::Click(Target::Point { x: 32.0, y: 9.0 })),
            "scale {scale}"
        );
    }
}

/// The policy's card (stored with every episode) names the server and model and the
/// sampling settings, but never credentials written into the URL.
#[test]
fn the_card_names_server_and_model_without_credentials() {
    let mut o = HttpOptions::new("http://agent:s3cret@127.0.0.1:8000/", "qwen2-vl");
    o.temperature = 0.7;
    o.top_p = 0.9;
    o.max_tokens = 64;
    o.api_key = Some("sk-never-stored".into());
    let card = HttpPolicy::new("remote", o).unwrap().card();
    assert_eq!(
        (card.name.as_str(), card.backend.as_str()),
        ("remote", "http")
    );
    assert_eq!(card.model.as_deref(), Some("qwen2-vl"));
    assert_eq!(card.endpoint.as_deref(), Some("http://127.0.0.1:8000/"));
    let s = card.sampling.unwrap();
    assert_eq!((s.temperature, s.top_p, s.max_tokens), (0.7, 0.9, 64));
    let stored = serde_json::to_string(&card).unwrap();
    assert!(
        !stored.contains("s3cret") && !stored.contains("agent") && !stored.contains("sk-never"),
        "{stored}"
    );
    // Without credentials the URL is kept as written.
    let plain = HttpPolicy::new("p", HttpOptions::new("http://gpu-box:8000", "m")).unwrap();
    assert_eq!(
        plain.card().endpoint.as_deref(),
        Some("http://gpu-box:8000")
    );
}
