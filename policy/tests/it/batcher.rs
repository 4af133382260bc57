//! The policy batching queue under a real runtime: concurrent requests meet in batches no
//! larger than the limit, every answer reaches its own caller, requests whose caller gave
//! up are not computed, and a failed batch errors its members while the queue lives on.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use browser_pool::{Action, Observation, Screenshot, ScrollState};
use futures::FutureExt;
use futures::future::BoxFuture;
use policy::{BatchBackend, BatchLimits, Batched, Decision, Policy, PolicyError, StepInput};

/// Answers `answer("<seed>")`, records batch sizes, fails batches containing seed 666.
struct Echo {
    batches: Mutex<Vec<Vec<u64>>>,
}

impl BatchBackend for Echo {
    fn run_batch(
        &self,
        inputs: Vec<StepInput>,
    ) -> BoxFuture<'_, Result<Vec<Result<Decision, PolicyError>>, PolicyError>> {
        async move {
            let seeds: Vec<u64> = inputs.iter().map(|i| i.seed).collect();
            self.batches.lock().unwrap().push(seeds.clone());
            tokio::time::sleep(Duration::from_millis(30)).await;
            if seeds.contains(&666) {
                return Err(PolicyError::Failed("model crashed on this batch".into()));
            }
            Ok(seeds
                .into_iter()
                .map(|s| Ok(Decision::action(Action::Answer(s.to_string()), "echo")))
                .collect())
        }
        .boxed()
    }
}

fn input(seed: u64) -> StepInput {
    let task = tasks::parse_task(
        r#"{"id": "t", "instruction": "x", "start_url": "http://127.0.0.1:1/",
            "rubric": {"groups": [{"facts": [{"check": {"type": "url", "prefix": "http"}}]}]}}"#,
    )
    .unwrap();
    StepInput {
        instruction: task.instruction.as_str().into(),
        task: Arc::new(task),
        observation: Arc::new(Observation {
            url: "http://127.0.0.1:1/".into(),
            title: String::new(),
            screenshot: Screenshot {
                bytes: Vec::new(),
                mime: "image/jpeg",
                width: 1,
                height: 1,
                scale: 1.0,
            },
            elements: Vec::new(),
            scroll: ScrollState {
                x: 0.0,
                y: 0.0,
                page_height: 0.0,
                viewport_height: 0.0,
            },
            last_action_error: None,
            ..Default::default()
        }),
        history: Arc::from(Vec::new()),
        step: 0,
        max_steps: 1,
        seed,
        answered: None,
    }
}

fn answer(d: &Result<Decision, PolicyError>) -> String {
    match d {
        Ok(Decision {
            action: Ok(Action::Answer(a)),
            ..
        }) => a.clone(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_are_batched_and_answered_in_place() {
    let backend = Arc::new(Echo {
        batches: Mutex::new(Vec::new()),
    });
    let limits = BatchLimits {
        max_batch: 4,
        max_wait: Duration::from_millis(40),
    };
    let policy = Batched::new("echo", backend.clone(), limits);
    let answers = futures::future::join_all((0..10u64).map(|s| policy.decide(input(s)))).await;
    for (s, a) in answers.iter().enumerate() {
        assert_eq!(answer(a), s.to_string(), "each caller gets its own answer");
    }
    let batches = backend.batches.lock().unwrap().clone();
    assert!(batches.iter().all(|b| b.len() <= 4), "{batches:?}");
    assert!(
        batches.len() <= 4,
        "10 requests need few batches, got {batches:?}"
    );
    let mut seen: Vec<u64> = batches.concat();
    seen.sort();
    assert_eq!(
        seen,
        (0..10).collect::<Vec<_>>(),
        "every request computed exactly once"
    );

    // A lone request is not held back for companions that never come: it goes once
    // max_wait (40 ms) is up. The bound is a hang guard a busy machine does not reach.
    let t = std::time::Instant::now();
    assert_eq!(answer(&policy.decide(input(42)).await), "42");
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_batch_errors_its_members_and_the_queue_lives_on() {
    let backend = Arc::new(Echo {
        batches: Mutex::new(Vec::new()),
    });
    let limits = BatchLimits {
        max_batch: 8,
        max_wait: Duration::from_millis(40),
    };
    let policy = Batched::new("echo", backend.clone(), limits);
    let results = futures::future::join_all([666u64, 1, 2].map(|s| policy.decide(input(s)))).await;
    assert!(
        results
            .iter()
            .all(|r| matches!(r, Err(PolicyError::Failed(m)) if m.contains("crashed"))),
        "{results:?}"
    );
    assert_eq!(
        answer(&policy.decide(input(3)).await),
        "3",
        "the next batch runs"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_whose_caller_gave_up_are_not_computed() {
    let backend = Arc::new(Echo {
        batches: Mutex::new(Vec::new()),
    });
    let limits = BatchLimits {
        max_batch: 8,
        max_wait: Duration::from_millis(150),
    };
    let policy = Batched::new("echo", backend.clone(), limits);
    // Caller 100 gives up before the batch forms; caller 7 waits.
    let abandoned =
        tokio::time::timeout(Duration::from_millis(20), policy.decide(input(100))).await;
    assert!(abandoned.is_err());
    assert_eq!(answer(&policy.decide(input(7)).await), "7");
    let computed: Vec<u64> = backend.batches.lock().unwrap().concat();
    assert_eq!(
        computed,
        vec![7],
        "the abandoned request was dropped, not run"
    );
}
