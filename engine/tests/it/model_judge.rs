//! The model judge's pipeline on a backend whose verdicts are known: one that answers from
//! a table (the real `JudgeBackend` seam) and records every question. Over episodes with
//! passing and failing facts in words, binary judging with the critic must give the same
//! success labels as exhaustive judging with fewer calls, ask the likeliest failure first,
//! and mark the facts it left unchecked as such; calls are counted as asked; the reference
//! answer is matched by rule and only sent to the model when the rules cannot tell.

use std::sync::{Arc, Mutex};

use engine::PageSnapshot;
use engine::judge::{Evidence, JudgeBackend, JudgeConfig, ModelJudge, judge_episode};
use futures::FutureExt;
use futures::future::BoxFuture;
use policy::PolicyError;
use rubrics::{Credit, Rubric, Trajectory};
use uuid::Uuid;

/// Answers YES to the facts it is told hold, NO to the others, YES to the
/// anti-hallucination question, `reference` to the reference-answer question; logs the
/// facts asked, in order.
struct Table {
    holds: Vec<&'static str>,
    reference: bool,
    asked: Mutex<Vec<String>>,
}

const FACT_PREFIX: &str = "Fact to verify: ";

impl JudgeBackend for Table {
    fn name(&self) -> &str {
        "table"
    }
    fn ask(
        &self,
        _images: Vec<Vec<u8>>,
        question: String,
        _seed: u64,
    ) -> BoxFuture<'_, Result<String, PolicyError>> {
        let fact = question
            .lines()
            .find_map(|l| l.strip_prefix(FACT_PREFIX))
            .map(str::to_string);
        let reply = match fact {
            None if question.contains("same answer as the reference") => {
                self.asked.lock().unwrap().push("<reference>".into());
                if self.reference {
                    "YES, the same value."
                } else {
                    "NO, a different value."
                }
            }
            Some(f) => {
                let yes = self.holds.iter().any(|h| *h == f);
                self.asked.lock().unwrap().push(f);
                if yes {
                    "YES. It is shown."
                } else {
                    "NO. Nothing shows it."
                }
            }
            None => {
                self.asked.lock().unwrap().push("<claims>".into());
                "YES. The claims are visible."
            }
        };
        async move { Ok(reply.to_string()) }.boxed()
    }
}

const MUG: &str = "The cart contains the blue ceramic mug";
const QTY: &str = "The quantity of the mug in the cart is two";
const EXPRESS: &str = "The shipping method selected is express delivery";
const GIFT: &str = "A gift message was added to the order";

fn rubric() -> Rubric {
    Rubric::from_json(serde_json::json!({"groups": [
        {"id": "cart", "facts": [
            {"id": "mug", "description": MUG, "check": {"type": "judge"}},
            {"id": "qty", "description": QTY, "check": {"type": "judge"}}]},
        {"id": "checkout", "facts": [
            {"id": "express", "description": EXPRESS, "check": {"type": "judge"}, "weight": 2.0},
            {"id": "gift", "description": GIFT, "check": {"type": "judge"}}]}
    ]}))
    .unwrap()
}

/// An episode: what its final page showed, and which facts really hold there.
struct Case {
    final_text: &'static str,
    holds: Vec<&'static str>,
}

fn cases() -> Vec<Case> {
    vec![
        // Everything holds and is visible: binary judging must verify every fact.
        Case {
            final_text: "Cart: blue ceramic mug, quantity two. Shipping method selected: express delivery. Gift message added to the order.",
            holds: vec![MUG, QTY, EXPRESS, GIFT],
        },
        // Express shipping never appeared anywhere: the critic asks it first, it fails.
        Case {
            final_text: "Cart: blue ceramic mug, quantity two. Gift message added to the order.",
            holds: vec![MUG, QTY, GIFT],
        },
        // Nothing of the checkout group was seen, and neither holds.
        Case {
            final_text: "Cart: blue ceramic mug, quantity two.",
            holds: vec![MUG, QTY],
        },
        // Only the mug holds.
        Case {
            final_text: "Cart: blue ceramic mug. Shipping method selected: express delivery. Gift message added.",
            holds: vec![MUG, EXPRESS, GIFT],
        },
    ]
}

fn evidence(case: &Case, answer: Option<&str>, reference: Option<&str>) -> Evidence {
    Evidence {
        episode: Uuid::new_v4(),
        instruction: "Put two blue mugs in the cart and check out with express delivery as a gift"
            .into(),
        final_answer: answer.map(str::to_string),
        visited_urls: vec!["http://shop.test/cart".into()],
        titles: vec!["Cart".into()],
        final_text: case.final_text.into(),
        screenshots: vec![vec![1, 2, 3]],
        reference_answer: reference.map(str::to_string),
    }
}

struct Run {
    success: bool,
    credit: Credit,
    calls: usize,
    exhaustive_calls: usize,
    asked: Vec<String>,
    skipped: Vec<String>,
    verified: Vec<(String, bool)>,
    evidence: Vec<String>,
}

async fn run(case: &Case, answer: Option<&str>, binary: bool, critic: bool) -> Run {
    run_with_reference(case, answer, None, false, binary, critic).await
}

async fn run_with_reference(
    case: &Case,
    answer: Option<&str>,
    reference: Option<&str>,
    reference_agrees: bool,
    binary: bool,
    critic: bool,
) -> Run {
    let backend = Arc::new(Table {
        holds: case.holds.clone(),
        reference: reference_agrees,
        asked: Mutex::new(Vec::new()),
    });
    // No store: no verdict cache, every verification is a real question.
    let judge = ModelJudge::new(backend.clone(), JudgeConfig::default(), None);
    let traj = Trajectory {
        final_answer: answer.map(str::to_string),
        visited_urls: vec!["http://shop.test/cart".into()],
    };
    let j = judge_episode(
        &judge,
        &rubric(),
        &traj,
        &PageSnapshot::default(),
        evidence(case, answer, reference),
        binary,
        critic,
    )
    .await
    .unwrap();
    let asked = backend.asked.lock().unwrap().clone();
    Run {
        success: j.judgement.success,
        credit: j.judgement.credit,
        calls: j.judgement.model_calls,
        exhaustive_calls: j.exhaustive_calls,
        asked,
        skipped: j
            .judgement
            .skipped
            .iter()
            .map(|s| s.fact_id.clone())
            .collect(),
        verified: j
            .judgement
            .verdicts
            .iter()
            .map(|v| (v.fact_id.clone(), v.passed))
            .collect(),
        evidence: j
            .judgement
            .verdicts
            .iter()
            .map(|v| v.evidence.clone())
            .collect(),
    }
}

#[tokio::test]
async fn critic_guided_binary_judging_keeps_labels_with_fewer_calls() {
    let (mut exhaustive_calls, mut binary_calls) = (0, 0);
    let mut labels = Vec::new();
    for (i, case) in cases().iter().enumerate() {
        let full = run(case, None, false, false).await;
        let quick = run(case, None, true, true).await;
        assert_eq!(full.success, quick.success, "case {i}: same label");
        assert_eq!(
            full.success,
            case.holds.len() == 4,
            "case {i}: the label follows the table"
        );
        labels.push(full.success);
        // Exhaustive: every fact, in rubric order, one call each.
        assert_eq!(full.asked, [MUG, QTY, EXPRESS, GIFT], "case {i}");
        assert_eq!(full.calls, 4, "case {i}");
        assert_eq!(full.exhaustive_calls, 4, "case {i}");
        assert!(full.skipped.is_empty(), "case {i}");
        assert!(matches!(full.credit, Credit::Exact(_)), "case {i}");
        // Binary with the critic: stops at the first failed fact.
        assert_eq!(quick.calls, quick.asked.len(), "case {i}: calls counted");
        if full.success {
            assert_eq!(quick.calls, 4, "case {i}: a success needs every fact");
            assert_eq!(quick.credit, full.credit, "case {i}");
        } else {
            assert!(quick.calls < full.calls, "case {i}: stopped early");
            let last = quick.asked.last().unwrap();
            assert!(
                !case.holds.contains(&last.as_str()),
                "case {i}: the last question was the failure"
            );
            // What was left unchecked is marked so, never counted as verified.
            assert_eq!(quick.skipped.len() + quick.verified.len(), 4, "case {i}");
            assert!(!quick.skipped.is_empty(), "case {i}");
            let Credit::LowerBound {
                at_least,
                of_verified,
            } = quick.credit
            else {
                panic!(
                    "case {i}: early stop gives a lower bound: {:?}",
                    quick.credit
                )
            };
            assert!(
                at_least <= full.credit.score() + 1e-9,
                "case {i}: {at_least} is a lower bound of {}",
                full.credit.score()
            );
            let passed = quick.verified.iter().filter(|(_, p)| *p).count();
            assert_eq!(
                of_verified == 0.0,
                passed == 0,
                "case {i}: credit over the verified facts"
            );
        }
        exhaustive_calls += full.calls;
        binary_calls += quick.calls;
    }
    assert_eq!(labels, [true, false, false, false], "mixed labels");
    assert!(
        binary_calls < exhaustive_calls,
        "{binary_calls} vs {exhaustive_calls}"
    );
    // 4 + 1 + 1 + 1: the critic's first guess is the failure wherever evidence is absent.
    assert_eq!((exhaustive_calls, binary_calls), (16, 7));
}

#[tokio::test]
async fn the_critic_asks_the_likeliest_failure_first() {
    let cases = cases();
    // Express delivery never appeared: asked first, fails, judging stops.
    let quick = run(&cases[1], None, true, true).await;
    assert_eq!(quick.asked, [EXPRESS]);
    assert_eq!(quick.skipped, ["mug", "qty", "gift"]);
    assert_eq!(
        quick.credit,
        Credit::LowerBound {
            at_least: 0.0,
            of_verified: 0.0
        }
    );
    // Without the critic, binary judging walks the rubric: two passing facts first.
    let plain = run(&cases[1], None, true, false).await;
    assert_eq!(plain.asked, [MUG, QTY, EXPRESS]);
    assert_eq!(plain.skipped, ["gift"]);
    assert_eq!(
        plain.credit,
        Credit::LowerBound {
            at_least: 2.0 / 5.0,
            of_verified: 2.0 / 4.0
        }
    );
    // Case 3: qty is the only fact without support (the mug is there, checkout words too).
    let quick = run(&cases[3], None, true, true).await;
    assert_eq!(quick.asked, [QTY]);
}

#[tokio::test]
async fn the_anti_hallucination_call_is_counted_and_asked_once() {
    let cases = cases();
    let full = run(
        &cases[0],
        Some("Done: two blue mugs, express, gift"),
        false,
        false,
    )
    .await;
    assert_eq!(full.asked[0], "<claims>");
    assert_eq!(full.calls, 5, "four facts and the claims check");
    assert_eq!(full.exhaustive_calls, 5);
    let quick = run(&cases[1], Some("Done"), true, true).await;
    assert_eq!(quick.asked, ["<claims>", EXPRESS]);
    assert_eq!((quick.calls, quick.exhaustive_calls), (2, 5));
}

#[tokio::test]
async fn a_blocking_page_fails_facts_without_calls() {
    let case = Case {
        final_text: "Access denied. You do not have permission.",
        holds: vec![MUG, QTY, EXPRESS, GIFT],
    };
    let full = run(&case, Some("blocked"), false, false).await;
    assert!(!full.success);
    assert!(full.asked.is_empty());
    assert_eq!((full.calls, full.exhaustive_calls), (0, 0));
    assert_eq!(full.verified.len(), 4, "every fact failed with the label");
}

#[tokio::test]
async fn a_reference_answer_is_matched_by_rule_before_any_model_call() {
    let case = &cases()[0];
    // The rules settle it: the same number. No reference call; the evidence says so.
    let ruled = run_with_reference(
        case,
        Some("It is €35 per bag"),
        Some("€35"),
        false,
        false,
        false,
    )
    .await;
    assert!(
        !ruled.asked.contains(&"<reference>".to_string()),
        "{:?}",
        ruled.asked
    );
    assert_eq!(ruled.calls, 5, "the claims check and four facts");
    assert_eq!(ruled.exhaustive_calls, 5);
    for e in &ruled.evidence {
        assert!(
            e.starts_with(
                "[reference answer matched (decided by rule: the answer's number 35 equals 35)]"
            ),
            "{e}"
        );
    }
    let wrong = run_with_reference(case, Some("€40"), Some("€35"), true, false, false).await;
    assert!(!wrong.asked.contains(&"<reference>".to_string()));
    assert!(
        wrong.evidence[0].starts_with("[reference answer not matched (decided by rule:"),
        "{}",
        wrong.evidence[0]
    );

    // Words the rules cannot compare: one model call, its verdict recorded as the model's.
    for agrees in [true, false] {
        let asked = run_with_reference(
            case,
            Some("thirty-five euros"),
            Some("€35"),
            agrees,
            false,
            false,
        )
        .await;
        assert_eq!(
            asked.asked.iter().filter(|a| *a == "<reference>").count(),
            1,
            "asked once per episode: {:?}",
            asked.asked
        );
        assert_eq!(asked.calls, 6, "claims, reference, four facts");
        assert_eq!(asked.exhaustive_calls, 6);
        let want = if agrees {
            "[reference answer matched (decided by model: YES"
        } else {
            "[reference answer not matched (decided by model: NO"
        };
        assert!(
            asked.evidence.iter().all(|e| e.starts_with(want)),
            "{:?}",
            asked.evidence
        );
    }

    // Without a reference answer, no reference step.
    let none = run(case, Some("€35"), false, false).await;
    assert!(none.evidence.iter().all(|e| !e.contains("reference")));
}

/// Answers the facts from the seed (even: YES) and the anti-hallucination question YES,
/// recording what each question came with.
#[derive(Default)]
struct BySeed {
    seen: Mutex<Vec<(String, usize, u64)>>,
}

impl JudgeBackend for BySeed {
    fn name(&self) -> &str {
        "by-seed"
    }
    fn ask(
        &self,
        images: Vec<Vec<u8>>,
        question: String,
        seed: u64,
    ) -> BoxFuture<'_, Result<String, PolicyError>> {
        let reply = if question.contains("Is every factual claim") || seed.is_multiple_of(2) {
            "YES."
        } else {
            "NO."
        };
        self.seen
            .lock()
            .unwrap()
            .push((question, images.len(), seed));
        async move { Ok(reply.to_string()) }.boxed()
    }
}

#[tokio::test]
async fn calibration_shows_the_judge_screenshots_and_the_reference_and_reseeds_each_run() {
    use engine::judge::calibration::{LabelledEpisode, evaluate, expand};
    let line = include_str!("../../../rubrics/calibration/bundled.jsonl")
        .lines()
        .find(|l| l.contains("\"booking-bag-fee/reference\""))
        .unwrap();
    let mut recorded: LabelledEpisode = serde_json::from_str(line).unwrap();
    {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        recorded.screenshots = vec![b64.encode([1u8, 2]), b64.encode([3u8, 4])];
    }
    // The reference run with its fact in words ("the final answer is €35").
    let items: Vec<LabelledEpisode> = expand(&[recorded])
        .unwrap()
        .into_iter()
        .filter(|i| i.gold.contains_key("calibration.answer"))
        .collect();
    assert_eq!(items.len(), 2, "the reference run and the wrong answer");
    let backend = Arc::new(BySeed::default());
    let judge = ModelJudge::new(backend.clone(), JudgeConfig::default(), None);
    let runs = 4;
    let report = evaluate(&items, Some(&judge), runs).await.unwrap();

    let seen = backend.seen.lock().unwrap().clone();
    let facts: Vec<_> = seen
        .iter()
        .filter(|(q, _, _)| q.contains("Fact to verify: The agent's final answer is: €35"))
        .collect();
    assert_eq!(
        facts.len(),
        items.len() * runs,
        "one question per item and run"
    );
    for (q, images, _) in &facts {
        assert_eq!(*images, 2, "the recorded screenshots are shown");
        assert!(q.contains("A reference answer: €35"), "{q}");
    }
    // "€35 per bag" is matched by rule (the number); the wrong answer has no number to
    // compare, so the model is asked, once per run.
    let reference_questions: Vec<_> = seen
        .iter()
        .filter(|(q, _, _)| q.contains("same answer as the reference"))
        .collect();
    assert_eq!(reference_questions.len(), runs);
    assert!(
        reference_questions
            .iter()
            .all(|(q, _, _)| q.contains("I could not find this on the website")),
        "the rules settled the reference run"
    );
    // Each run samples with its own seeds: the same question, `runs` different seeds.
    let reference_run_seeds: std::collections::BTreeSet<u64> = facts
        .iter()
        .filter(|(q, _, _)| q.contains("final answer: €35 per bag"))
        .map(|(_, _, s)| *s)
        .collect();
    assert_eq!(reference_run_seeds.len(), runs, "{reference_run_seeds:?}");
    assert!(
        report.agreement < 1.0,
        "seed-dependent verdicts disagree across runs: {report:?}"
    );
}
