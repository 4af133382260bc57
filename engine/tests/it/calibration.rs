//! The rule judge on the bundled labelled set (recorded reference runs plus mutations with
//! known effects) must be right on every fact.

use engine::judge::calibration::{LabelledEpisode, evaluate, expand};

#[tokio::test]
async fn rule_checks_are_right_on_every_labelled_fact() {
    let text = include_str!("../../../rubrics/calibration/bundled.jsonl");
    let recorded: Vec<LabelledEpisode> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(recorded.len() >= 30, "{} recorded episodes", recorded.len());
    let items = expand(&recorded).unwrap();
    let negatives = items
        .iter()
        .flat_map(|i| i.gold.values())
        .filter(|g| !**g)
        .count();
    let positives = items
        .iter()
        .flat_map(|i| i.gold.values())
        .filter(|g| **g)
        .count();
    assert!(
        negatives > 100 && positives > 300,
        "{positives} true and {negatives} false labels"
    );
    let report = evaluate(&items, None, 1).await.unwrap();
    assert!(report.mistakes.is_empty(), "{:#?}", report.mistakes);
    assert_eq!(
        (report.accuracy, report.precision, report.recall),
        (1.0, 1.0, 1.0)
    );
    for kind in ["answer", "element", "url", "page_text"] {
        assert!(
            report.by_kind.contains_key(kind),
            "the set exercises {kind} checks"
        );
    }
}
