//! Matching a final answer against a task's reference answer by rule, before any model is
//! asked: normalised equality, any of the reference's alternatives, and numbers within a
//! tolerance. Only what the rules cannot settle goes to a model judge.

use crate::normalize;

/// What the rules found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReferenceMatch {
    /// The answer agrees with the reference; why, in words.
    Match(String),
    /// The answer contradicts the reference (or there is none); why, in words.
    Mismatch(String),
    /// The rules cannot tell (e.g. the same fact in other words): ask a model.
    Inconclusive,
}

/// Relative tolerance for numeric answers (rounding in the last shown digit).
const RELATIVE_TOLERANCE: f64 = 1e-6;

/// The reference's alternatives: `a | b` or `a ; b` lists several acceptable answers.
fn alternatives(reference: &str) -> Vec<String> {
    reference
        .split(['|', ';'])
        .map(normalize::answer)
        .filter(|a| !a.is_empty())
        .collect()
}

/// A text that is one number with at most a unit or currency sign around it.
fn bare_number(s: &str) -> Option<f64> {
    let n = normalize::first_number(s)?;
    let words = s
        .split(|c: char| !c.is_alphabetic())
        .filter(|w| !w.is_empty())
        .count();
    (words <= 1).then_some(n)
}

/// Matches `answer` against `reference` by rule.
pub fn match_reference(answer: Option<&str>, reference: &str) -> ReferenceMatch {
    let Some(answer) = answer.map(normalize::answer).filter(|a| !a.is_empty()) else {
        return ReferenceMatch::Mismatch("the agent gave no final answer".into());
    };
    let alts = alternatives(reference);
    if let Some(hit) = alts.iter().find(|a| **a == answer) {
        return ReferenceMatch::Match(format!("normalised answer equals {hit:?}"));
    }
    // Numbers: a reference that is a number (with its unit) settles the question when the
    // answer states a number, whatever words surround it.
    let numbers: Vec<f64> = alts.iter().filter_map(|a| bare_number(a)).collect();
    if !numbers.is_empty()
        && numbers.len() == alts.len()
        && let Some(got) = normalize::first_number(&answer)
    {
        let close = |want: f64| (got - want).abs() <= RELATIVE_TOLERANCE * want.abs().max(1.0);
        return match numbers.iter().find(|w| close(**w)) {
            Some(w) => ReferenceMatch::Match(format!("the answer's number {got} equals {w}")),
            None => ReferenceMatch::Mismatch(format!(
                "the answer's number {got} is not {}",
                numbers
                    .iter()
                    .map(f64::to_string)
                    .collect::<Vec<_>>()
                    .join(" or ")
            )),
        };
    }
    ReferenceMatch::Inconclusive
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_answers_match_after_normalising() {
        assert!(matches!(
            match_reference(Some(" \"The Blue Mug.\" "), "the blue mug"),
            ReferenceMatch::Match(_)
        ));
    }

    #[test]
    fn any_alternative_matches() {
        assert!(matches!(
            match_reference(Some("Paris"), "Paris | Paris, France"),
            ReferenceMatch::Match(_)
        ));
        assert!(matches!(
            match_reference(Some("paris, france"), "Paris | Paris, France"),
            ReferenceMatch::Match(_)
        ));
    }

    #[test]
    fn numbers_settle_numeric_references() {
        assert!(matches!(
            match_reference(Some("It costs €35 per bag"), "€35"),
            ReferenceMatch::Match(_)
        ));
        assert!(matches!(
            match_reference(Some("1,200 mAh"), "1200"),
            ReferenceMatch::Match(_)
        ));
        let ReferenceMatch::Mismatch(why) = match_reference(Some("€40"), "€35") else {
            panic!("a different number is a mismatch")
        };
        assert!(why.contains("40") && why.contains("35"), "{why}");
    }

    #[test]
    fn no_answer_is_a_mismatch_and_words_are_inconclusive() {
        assert!(matches!(
            match_reference(None, "€35"),
            ReferenceMatch::Mismatch(_)
        ));
        assert!(matches!(
            match_reference(Some("   "), "€35"),
            ReferenceMatch::Mismatch(_)
        ));
        assert_eq!(
            match_reference(Some("thirty-five euros"), "€35"),
            ReferenceMatch::Inconclusive
        );
        assert_eq!(
            match_reference(Some("The mug made of blue ceramic"), "The blue ceramic mug"),
            ReferenceMatch::Inconclusive
        );
    }
}
