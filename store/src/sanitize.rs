//! Postgres `text` and `jsonb` reject the NUL character, which pages and model outputs can
//! contain. What the store writes is cleaned here (NUL becomes U+FFFD), so such an episode
//! is stored instead of failing forever.

use serde_json::Value;

use super::episodes::{EpisodeRecord, VerdictOutcome};

const NUL: char = '\0';
const REPLACEMENT: &str = "\u{FFFD}";

fn has_nul_json(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains(NUL),
        Value::Array(a) => a.iter().any(has_nul_json),
        Value::Object(o) => o.iter().any(|(k, v)| k.contains(NUL) || has_nul_json(v)),
        _ => false,
    }
}

fn clean_json(v: &mut Value) {
    match v {
        Value::String(s) => clean(s),
        Value::Array(a) => a.iter_mut().for_each(clean_json),
        Value::Object(o) => {
            let old = std::mem::take(o);
            for (k, mut v) in old {
                clean_json(&mut v);
                o.insert(k.replace(NUL, REPLACEMENT), v);
            }
        }
        _ => {}
    }
}

fn clean(s: &mut String) {
    if s.contains(NUL) {
        *s = s.replace(NUL, REPLACEMENT);
    }
}

fn clean_opt(s: &mut Option<String>) {
    if let Some(s) = s {
        clean(s);
    }
}

fn nul(s: &str) -> bool {
    s.contains(NUL)
}

fn nul_opt(s: &Option<String>) -> bool {
    s.as_deref().is_some_and(nul)
}

/// Whether any text of the record contains NUL.
pub(super) fn needs_cleaning(r: &EpisodeRecord) -> bool {
    nul_opt(&r.final_answer)
        || r.final_page.as_ref().is_some_and(has_nul_json)
        || nul_opt(&r.final_url)
        || nul_opt(&r.instruction)
        || nul_opt(&r.judge_error)
        || r.visited_urls.iter().any(|u| nul(u))
        || r.steps.iter().any(|s| {
            nul(&s.core.url)
                || nul(&s.core.title)
                || nul(&s.core.action)
                || nul_opt(&s.core.thought)
                || nul_opt(&s.core.raw_output)
                || nul_opt(&s.core.action_error)
                || nul_opt(&s.core.prompt)
                || nul_opt(&s.core.ax_tree)
                || has_nul_json(&s.core.elements)
                || has_nul_json(&s.core.events)
                || has_nul_json(&s.core.tabs)
        })
        || r.verdicts.iter().any(|v| {
            let texts = match &v.outcome {
                VerdictOutcome::Checked {
                    evidence, reason, ..
                } => nul(evidence) || nul(reason),
                VerdictOutcome::Skipped => false,
            };
            texts || nul(&v.group_id) || nul(&v.fact_id)
        })
}

/// A copy of the record's text with NUL replaced; its blobs are left out (bytes are fine).
pub(super) fn cleaned(r: &EpisodeRecord) -> EpisodeRecord {
    let mut c = EpisodeRecord {
        id: r.id,
        end_reason: r.end_reason,
        instruction: r.instruction.clone(),
        final_answer: r.final_answer.clone(),
        final_url: r.final_url.clone(),
        final_screenshot: r.final_screenshot.clone(),
        final_page: r.final_page.clone(),
        steps: r.steps.clone(),
        verdicts: r.verdicts.clone(),
        blobs: Vec::new(),
        success: r.success,
        credit: r.credit,
        duration: r.duration,
        judge_time: r.judge_time,
        politeness_wait: r.politeness_wait,
        recorded: r.recorded.clone(),
        unmatched_requests: r.unmatched_requests,
        judge_calls: r.judge_calls,
        judge_facts: r.judge_facts,
        judge_exhaustive_calls: r.judge_exhaustive_calls,
        screen: r.screen,
        policy: r.policy.clone(),
        visited_urls: r.visited_urls.clone(),
        judge_error: r.judge_error.clone(),
    };
    clean_opt(&mut c.final_answer);
    if let Some(p) = &mut c.final_page {
        clean_json(p);
    }
    clean_opt(&mut c.final_url);
    clean_opt(&mut c.instruction);
    c.visited_urls.iter_mut().for_each(clean);
    for s in &mut c.steps {
        clean(&mut s.core.url);
        clean(&mut s.core.title);
        clean(&mut s.core.action);
        clean_opt(&mut s.core.thought);
        clean_opt(&mut s.core.raw_output);
        clean_opt(&mut s.core.action_error);
        clean_opt(&mut s.core.prompt);
        clean_opt(&mut s.core.ax_tree);
        clean_json(&mut s.core.elements);
        clean_json(&mut s.core.events);
        clean_json(&mut s.core.tabs);
    }
    for v in &mut c.verdicts {
        if let VerdictOutcome::Checked {
            evidence, reason, ..
        } = &mut v.outcome
        {
            clean(evidence);
            clean(reason);
        }
        clean(&mut v.group_id);
        clean(&mut v.fact_id);
    }
    c
}
