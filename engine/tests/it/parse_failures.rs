//! Malformed model output through a real episode (Chromium, Postgres, the bundled wiki):
//! no action, an unknown action, an element number the observation does not list and an
//! over-long output each become an error the next observation shows and one counted
//! parse failure, never a panic or an action tried in the page; token ids that do not pair
//! with the log-probabilities are not stored.
//!
//! Its own test binary so the process-wide parse-failure counter moves only for this test.

use crate::common;

use std::sync::{Arc, Mutex};

use browser_pool::PoolConfig;
use engine::RunnerConfig;
use engine::{CampaignSpec, Engine};
use futures::FutureExt;
use futures::future::BoxFuture;
use metrics::METRICS;
use policy::output::{Grounding, parse_output};
use policy::{Decision, Policy, PolicyError, PolicyRegistry, StepInput};
use sqlx::PgPool;
use store::{EpisodeFilter, Store, TaskFilter};

/// What the "model" writes at each step: malformed outputs separated by valid scrolls (three
/// malformed outputs in a row would end the episode).
fn script() -> Vec<String> {
    vec![
        "I am not sure what to do here.".into(),
        "Action: scroll(down)".into(),
        "Action: fly(3)".into(),
        "Action: scroll(up)".into(),
        "The link is element 9999.\nAction: click(9999)".into(),
        "Action: scroll(down)".into(),
        format!("Action: type(1, \"{}\")", "a".repeat(5000)),
        "Action: stop()".into(),
    ]
}

/// A model policy whose outputs are fixed, parsed by the shared parser like the ONNX and
/// HTTP policies' outputs; it records the error each observation showed it.
struct Scripted {
    seen: Mutex<Vec<(u32, Option<String>)>>,
}

impl Policy for Scripted {
    fn name(&self) -> &str {
        "malformed"
    }
    fn decide(&self, input: StepInput) -> BoxFuture<'_, Result<Decision, PolicyError>> {
        async move {
            self.seen
                .lock()
                .unwrap()
                .push((input.step, input.observation.last_action_error.clone()));
            let text = script()[input.step as usize].clone();
            let (thought, action) = parse_output(&text, Grounding::Marks, (1280, 720));
            Ok(Decision {
                action,
                raw_output: text,
                thought,
                logprob: None,
                // Two tokens, and two ids on even steps but three on odd ones: a backend
                // whose ids do not pair with its log-probabilities.
                token_logprobs: vec![-0.5, -0.5],
                token_ids: (0..2 + input.step % 2).collect(),
                prompt: None,
            })
        }
        .boxed()
    }
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn malformed_outputs_are_error_observations_and_counted_parse_failures(pool: PgPool) {
    let sites = common::sites().await;
    let policy = Arc::new(Scripted {
        seen: Mutex::new(Vec::new()),
    });
    let mut policies = PolicyRegistry::builtin();
    policies.register(policy.clone());
    let engine = Engine::new(
        Store::from_pool(pool),
        PoolConfig::new(PoolConfig::default_chromium()),
        RunnerConfig::for_this_process(),
        policies,
    );
    engine.register_bundled(sites.bases()).await.unwrap();

    let before = METRICS.parse_failures.get();
    let id = engine
        .create_campaign(CampaignSpec {
            policy: Some("malformed".into()),
            tasks: Some(TaskFilter {
                ids: vec!["wiki-aster-length".into()],
                ..Default::default()
            }),
            max_steps: Some(8),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        engine.run_campaign(id).await.unwrap(),
        store::Status::Completed
    );
    assert_eq!(
        METRICS.parse_failures.get() - before,
        4,
        "no action, unknown action, bad element number and over-long output each count once"
    );

    let (eps, _) = engine
        .store()
        .list_episodes(&EpisodeFilter::campaign(id), 10, 0)
        .await
        .unwrap();
    assert_eq!(eps.len(), 1);
    let detail = engine
        .store()
        .get_episode(eps[0].id)
        .await
        .unwrap()
        .unwrap();
    let errors: Vec<Option<&str>> = detail
        .steps
        .iter()
        .map(|s| s.core.action_error.as_deref())
        .collect();
    assert_eq!(errors.len(), 8, "{errors:?}");
    for (step, want) in [
        (0, "no action found"),
        (2, "unknown action"),
        (4, "element 9999 is not in the element list"),
        (6, "longer than"),
    ] {
        let e = errors[step].unwrap_or_default();
        assert!(e.contains(want), "step {step}: {e:?}");
    }
    for step in [1, 3, 5, 7] {
        assert_eq!(errors[step], None, "step {step} was valid");
    }
    for (step, s) in detail.steps.iter().enumerate() {
        let want = (step % 2 == 0).then(|| vec![0, 1]);
        assert_eq!(s.token_ids, want, "step {step}: stored only when paired");
        assert_eq!(s.token_logprobs, Some(vec![-0.5, -0.5]), "step {step}");
    }

    // The step after each malformed output shows the model what was wrong.
    let seen = policy.seen.lock().unwrap().clone();
    for (step, shown) in &seen {
        let shown = shown.as_deref().unwrap_or_default();
        if step % 2 == 1 {
            assert!(
                shown.contains("not a valid action")
                    && shown.contains(errors[*step as usize - 1].unwrap()),
                "step {step} saw {shown:?}"
            );
        } else {
            assert!(
                !shown.contains("not a valid action"),
                "step {step} saw {shown:?}"
            );
        }
    }
    assert_eq!(seen.len(), 8);
}
