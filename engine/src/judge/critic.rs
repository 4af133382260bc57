//! The cheap parts of judging: which screenshots to show, whether the final page is a
//! blocking page, and the critic's guess of which facts will fail.

use rubrics::{Check, Rubric};

use super::Evidence;

/// The screenshots to show: the last always, then earlier distinct ones, at most `k`.
pub fn select_screenshots(all: &[Vec<u8>], k: usize) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    for s in all.iter().rev() {
        if out.len() >= k.max(1) {
            break;
        }
        if !out.contains(s) {
            out.push(s.clone());
        }
    }
    out.reverse();
    out
}

const BLOCKING: &[(&str, &str)] = &[
    ("captcha", "CAPTCHA"),
    ("verify you are human", "human verification"),
    ("are you a robot", "human verification"),
    ("access denied", "access denied"),
    ("403 forbidden", "access denied"),
    ("unusual traffic", "rate limited"),
    ("too many requests", "rate limited"),
    ("enable javascript and cookies to continue", "bot wall"),
];

/// A label when the final page blocks the agent (CAPTCHA, access denied, rate limits).
pub fn blocking_label(final_text: &str, titles: &[String]) -> Option<String> {
    let head: String = final_text
        .chars()
        .take(2000)
        .collect::<String>()
        .to_lowercase();
    let title = titles.last().map(|t| t.to_lowercase()).unwrap_or_default();
    BLOCKING
        .iter()
        .find(|(needle, _)| head.contains(needle) || title.contains(needle))
        .map(|(_, label)| (*label).to_string())
}

const STOPWORDS: &[&str] = &[
    "the", "and", "that", "with", "this", "from", "they", "their", "there", "which", "agent",
    "answer", "final", "page", "shows", "task", "into", "have", "been", "were", "what", "when",
    "where", "about", "than", "then",
];

fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 3)
        .map(str::to_lowercase)
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .collect()
}

/// Model facts, likeliest to fail first: those whose words appear least in what the
/// episode saw and answered (no evidence for a fact anywhere is the strongest sign).
pub fn critic_order(rubric: &Rubric, ev: &Evidence) -> Vec<String> {
    let seen = format!(
        "{} {} {} {}",
        ev.final_text,
        ev.final_answer.as_deref().unwrap_or_default(),
        ev.titles.join(" "),
        ev.visited_urls.join(" ")
    )
    .to_lowercase();
    let mut scored: Vec<(f64, usize, String)> = rubric
        .groups()
        .iter()
        .flat_map(|g| &g.facts)
        .filter(|f| matches!(f.check, Check::Judge))
        .enumerate()
        .map(|(i, f)| {
            let w = words(&f.description);
            let support = if w.is_empty() {
                1.0
            } else {
                w.iter().filter(|x| seen.contains(x.as_str())).count() as f64 / w.len() as f64
            };
            (support, i, f.id.clone())
        })
        .collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    scored.into_iter().map(|(_, _, id)| id).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_screenshot_is_always_shown() {
        let shots: Vec<Vec<u8>> = vec![vec![1], vec![2], vec![2], vec![3]];
        assert_eq!(select_screenshots(&shots, 2), vec![vec![2], vec![3]]);
        assert_eq!(select_screenshots(&shots, 1), vec![vec![3]]);
        assert_eq!(
            select_screenshots(&shots, 9),
            vec![vec![1], vec![2], vec![3]],
            "duplicates dropped"
        );
        assert!(select_screenshots(&[], 3).is_empty());
    }

    #[test]
    fn blocking_pages_are_labelled() {
        assert_eq!(
            blocking_label("Please complete the CAPTCHA below", &[]).as_deref(),
            Some("CAPTCHA")
        );
        assert_eq!(
            blocking_label("", &["403 Forbidden".into()]).as_deref(),
            Some("access denied")
        );
        assert_eq!(
            blocking_label("Welcome to the shop", &["Shop".into()]),
            None
        );
    }

    #[test]
    fn facts_without_evidence_come_first() {
        let rubric = Rubric::from_json(serde_json::json!({"groups": [{"facts": [
            {"id": "a", "description": "The cart contains the blue ceramic mug", "check": {"type": "judge"}},
            {"id": "b", "description": "The shipping method is express delivery", "check": {"type": "judge"}},
            {"id": "c", "description": "rules", "check": {"type": "url", "prefix": "http"}}
        ]}]}))
        .unwrap();
        let ev = Evidence {
            final_text: "Your cart: Blue Ceramic Mug x1".into(),
            ..Default::default()
        };
        assert_eq!(
            critic_order(&rubric, &ev),
            vec!["b", "a"],
            "rule facts are not ordered"
        );
    }
}
