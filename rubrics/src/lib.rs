//! Rubrics and the rule judge.
//!
//! A [`Rubric`] is a list of fact groups (WebGym's shape); each fact has a [`Check`]: the
//! final URL, the final page's text, an element's state, or the agent's final answer.
//! Users write a [`RubricSpec`] (JSON); [`Rubric::from_json`] validates it and reports
//! every problem with its path (`groups[2].facts[0].check.regex`). [`judge`] runs the
//! checks at the end of an episode and returns per-fact verdicts, binary success (every
//! group satisfied) and partial credit (weighted fraction of facts).
//!
//! The judge reads the page only through the small [`PageProbe`] trait. This crate knows
//! nothing of browsers, HTTP servers or Postgres.
#![deny(missing_docs)]

mod judge;
pub mod normalize;
mod reference;
mod rubric;
pub mod selector;
mod spec;

pub use judge::{
    CheckError, Credit, ElementSnapshot, FactVerdict, FactVerifier, JudgeOptions, Judgement,
    NoModel, PageProbe, ProbeError, RULE_JUDGE, SkippedFact, Trajectory, judge, judge_with,
};
pub use reference::{ReferenceMatch, match_reference};
pub use rubric::{
    AnswerMatch, Check, ElementExpect, Fact, Group, MINIWOB_REWARD_JS, PageUrl, Rubric,
    RubricError, TextMatch, UrlMatch, UrlScope,
};
pub use spec::{CheckSpec, FactSpec, GroupSpec, RubricSpec, TextMatchSpec};
