//! Set-up and checks shared by the engine's integration tests.
// Each test file uses its own part of this module.
#![allow(dead_code)]

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::sync::Arc;

use browser_pool::{BrowserPool, PoolConfig};
use engine::RunnerConfig;
use engine::SitesServer;
use engine::{CampaignSpec, Engine};
use inference::GenParams;
use inference::Generation;
use inference::Model;
use inference::Prompt;
use policy::{Policy, PolicyRegistry};
use sqlx::PgPool;
use store::{EpisodeFilter, Store, TaskFilter};

/// The first step of a task with `instruction` (its rubric never consulted) on
/// `observation`.
pub fn step_input(
    instruction: &str,
    observation: browser_pool::Observation,
    seed: u64,
) -> policy::StepInput {
    let task = tasks::parse_task(
        &serde_json::json!({"id": "t", "instruction": instruction, "start_url": "http://127.0.0.1:1/",
            "rubric": {"groups": [{"facts": [{"check": {"type": "url", "prefix": "http"}}]}]}})
        .to_string(),
    )
    .unwrap();
    policy::StepInput {
        instruction: task.instruction.as_str().into(),
        task: Arc::new(task),
        observation: Arc::new(observation),
        history: Arc::from(Vec::new()),
        step: 0,
        max_steps: 5,
        seed,
        answered: None,
    }
}

/// Where `scripts/setup-python.sh` put ONNX Runtime and the generated models.
pub fn data_dir() -> PathBuf {
    PathBuf::from(
        std::env::var("SURFGYM_DATA_DIR")
            .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../.surfgym").into()),
    )
}

/// Generates `prompts` as one batch twice and each prompt alone: the batch must repeat
/// itself exactly for the same seeds, and every row must equal its generation alone
/// (tokens exactly, log-probabilities to 1e-3; padding must not leak). Returns the batch.
pub fn assert_batch_invariant(
    m: &mut Model,
    prompts: &[Prompt],
    params: &GenParams,
    seeds: &[u64],
) -> Vec<Generation> {
    let batched = m.generate(prompts, params, seeds).unwrap();
    assert_eq!(
        batched,
        m.generate(prompts, params, seeds).unwrap(),
        "same inputs and seeds, same output ({params:?})"
    );
    for (i, p) in prompts.iter().enumerate() {
        let alone = m
            .generate(std::slice::from_ref(p), params, &seeds[i..=i])
            .unwrap()
            .remove(0);
        assert_eq!(
            alone.tokens, batched[i].tokens,
            "prompt {i}: batched tokens equal unbatched ({params:?})"
        );
        for (a, b) in alone.logprobs.iter().zip(&batched[i].logprobs) {
            assert!((a - b).abs() < 1e-3, "prompt {i}: logprobs {a} vs {b}");
        }
    }
    batched
}

/// The bundled practice sites on loopback, each on a free port.
pub async fn sites() -> SitesServer {
    SitesServer::start(IpAddr::V4(Ipv4Addr::LOCALHOST), None)
        .await
        .unwrap()
}

/// The bundled sites on loopback, the shop's base URL, and a one-browser pool.
pub async fn shop_and_pool() -> (SitesServer, String, BrowserPool) {
    let sites = sites().await;
    let shop = sites.bases()["shop"].clone();
    let mut cfg = PoolConfig::new(PoolConfig::default_chromium());
    cfg.browsers = 1;
    cfg.contexts_per_browser = 2;
    (sites, shop, BrowserPool::launch(cfg).await.unwrap())
}

/// The bundled sites and an engine over the test's database with the built-in policies and
/// `extra`, the bundled tasks registered, two contexts per browser.
pub async fn engine(pool: PgPool, extra: Vec<Arc<dyn Policy>>) -> (Engine, SitesServer) {
    engine_with(pool, extra, RunnerConfig::for_this_process()).await
}

/// [`engine`] with its runner configured.
pub async fn engine_with(
    pool: PgPool,
    extra: Vec<Arc<dyn Policy>>,
    runner: RunnerConfig,
) -> (Engine, SitesServer) {
    engine_observing(pool, extra, runner, |_| {}).await
}

/// [`engine_with`] with its browsers' configuration changed by `browsers` (what an
/// observation holds: the accessibility tree, set-of-marks).
pub async fn engine_observing(
    pool: PgPool,
    extra: Vec<Arc<dyn Policy>>,
    runner: RunnerConfig,
    browsers: impl FnOnce(&mut PoolConfig),
) -> (Engine, SitesServer) {
    let sites = sites().await;
    let mut policies = PolicyRegistry::builtin();
    for p in extra {
        policies.register(p);
    }
    let mut cfg = PoolConfig::new(PoolConfig::default_chromium());
    cfg.contexts_per_browser = 2;
    browsers(&mut cfg);
    let engine = Engine::new(Store::from_pool(pool), cfg, runner, policies);
    let report = engine.register_bundled(sites.bases()).await.unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    (engine, sites)
}

/// A campaign of the easy wiki tasks with `policy`.
pub fn wiki_easy(policy: &str) -> CampaignSpec {
    CampaignSpec {
        policy: Some(policy.into()),
        tasks: Some(TaskFilter {
            site: Some("wiki".into()),
            difficulty: Some("easy".into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A visible button element for hand-made observations.
pub fn button(id: u32, label: &str, bbox: browser_pool::Rect) -> browser_pool::Element {
    browser_pool::Element {
        id,
        tag: "button".into(),
        role: "button".into(),
        label: label.into(),
        bbox,
        in_viewport: true,
        ..browser_pool::Element::default()
    }
}

/// A viewport-sized page that does not scroll.
pub fn unscrolled(height: f64) -> browser_pool::ScrollState {
    browser_pool::ScrollState {
        x: 0.0,
        y: 0.0,
        page_height: height,
        viewport_height: height,
    }
}

/// A `width` x `height` JPEG screenshot: a gradient tinted by `shade`, so that different
/// shades give different images (and different vision features).
pub fn gradient_screenshot(width: u32, height: u32, shade: u8) -> browser_pool::Screenshot {
    let img = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([shade, (x % 256) as u8, (y % 256) as u8])
    });
    let mut jpeg = Vec::new();
    img.write_to(
        &mut std::io::Cursor::new(&mut jpeg),
        image::ImageFormat::Jpeg,
    )
    .unwrap();
    browser_pool::Screenshot {
        bytes: jpeg,
        mime: "image/jpeg",
        width,
        height,
        scale: 1.0,
    }
}

/// Runs campaign `id` to completion and lists its episodes.
pub async fn run_to_end(engine: &Engine, id: uuid::Uuid) -> Vec<store::EpisodeSummary> {
    assert_eq!(
        engine.run_campaign(id).await.unwrap(),
        store::Status::Completed
    );
    engine
        .store()
        .list_episodes(&EpisodeFilter::campaign(id), 100, 0)
        .await
        .unwrap()
        .0
}
