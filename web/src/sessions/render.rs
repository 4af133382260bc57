//! A session's observation and step result as JSON, in the session's dialect: surfgym's
//! own keys, or BrowserGym's (what BrowserGym agents and OpenEnv's BrowserGym clients
//! read).

use base64::Engine as _;
use engine::sessions::{Dialect, Snapshot};
use serde_json::{Value, json};

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The observation the client acts on next (after the episode ended: the goal and the
/// last action only, as there is no next page to act on).
pub fn observation(s: &Snapshot) -> Value {
    match s.dialect {
        Dialect::Surfgym => surfgym(s),
        Dialect::Browsergym => browsergym(s),
    }
}

fn surfgym(s: &Snapshot) -> Value {
    let mut o = json!({
        "instruction": &*s.instruction,
        "step": s.step,
        "max_steps": s.max_steps,
        "last_action": s.last_action,
    });
    let Some(input) = &s.input else {
        o["last_action_error"] = Value::Null;
        return o;
    };
    let obs = &input.observation;
    o["url"] = json!(obs.url);
    o["title"] = json!(obs.title);
    o["tabs"] = json!(obs.tabs);
    o["scroll"] = json!(obs.scroll);
    o["events"] = json!(obs.events);
    o["last_action_error"] = json!(obs.last_action_error);
    if s.observe.elements {
        o["elements"] = json!(obs.elements);
        o["element_lines"] = json!(obs.element_lines().join("\n"));
    }
    if s.observe.screenshot {
        o["screenshot"] = json!(b64(&obs.screenshot.bytes));
        o["screenshot_mime"] = json!(obs.screenshot.mime);
    }
    if let Some(marked) = obs.marked.as_ref().filter(|_| s.observe.set_of_marks) {
        o["marked_screenshot"] = json!(b64(&marked.bytes));
    }
    if s.observe.ax_tree {
        o["ax_tree"] = json!(obs.ax_tree);
    }
    o
}

fn browsergym(s: &Snapshot) -> Value {
    let goal = &*s.instruction;
    let mut o = json!({
        "goal": goal,
        "goal_object": [{"type": "text", "text": goal}],
        "last_action": s.last_action.clone().unwrap_or_default(),
        "elapsed_time": s.elapsed.as_secs_f64(),
        "error": "",
    });
    let Some(input) = &s.input else {
        o["last_action_error"] = json!("");
        return o;
    };
    let obs = &input.observation;
    o["url"] = json!(obs.url);
    o["open_pages_urls"] = json!(obs.tabs.iter().map(|t| &t.url).collect::<Vec<_>>());
    o["open_pages_titles"] = json!(obs.tabs.iter().map(|t| &t.title).collect::<Vec<_>>());
    o["active_page_index"] = json!(obs.tabs.iter().position(|t| t.active).unwrap_or(0));
    o["last_action_error"] = json!(obs.last_action_error.clone().unwrap_or_default());
    o["text"] = json!(if s.observe.elements {
        obs.element_lines().join("\n")
    } else {
        String::new()
    });
    o["axtree_txt"] = json!(
        obs.ax_tree
            .as_deref()
            .filter(|_| s.observe.ax_tree)
            .unwrap_or_default()
    );
    if s.observe.screenshot {
        o["screenshot"] = json!(b64(&obs.screenshot.bytes));
        o["screenshot_mime"] = json!(obs.screenshot.mime);
    }
    if let Some(marked) = obs.marked.as_ref().filter(|_| s.observe.set_of_marks) {
        o["som_screenshot"] = json!(b64(&marked.bytes));
    }
    o
}

/// `info` of a step: the step count and the action, and once the episode has ended its
/// verdict.
pub fn info(s: &Snapshot) -> Value {
    let error = s
        .input
        .as_ref()
        .and_then(|i| i.observation.last_action_error.clone());
    let mut info = json!({
        "session_id": s.session_id,
        "episode_id": s.episode_id,
        "campaign_id": s.campaign_id,
        "task_id": s.task_id,
        "step": s.step,
        "max_steps": s.max_steps,
        "dialect": s.dialect,
        "action": s.last_action,
        "action_error": error,
    });
    if let Some(end) = &s.ending {
        info["end_reason"] = json!(end.end_reason);
        info["success"] = json!(end.success);
        info["score"] = json!(end.score);
        info["final_answer"] = json!(end.final_answer);
        info["judge_error"] = json!(end.judge_error);
        info["verdicts"] = Value::Array(
            end.verdicts
                .iter()
                .map(|v| {
                    let (passed, evidence, reason) = match &v.outcome {
                        store::VerdictOutcome::Checked {
                            passed,
                            evidence,
                            reason,
                        } => (
                            Some(*passed),
                            Some(evidence.as_str()),
                            Some(reason.as_str()),
                        ),
                        store::VerdictOutcome::Skipped => (None, None, None),
                    };
                    json!({"group": v.group_id, "fact": v.fact_id, "judge": v.judge,
                        "passed": passed, "evidence": evidence, "reason": reason})
                })
                .collect(),
        );
    }
    info
}

/// The reward of a step: the rubric's score once the episode has ended, else 0.
pub fn reward(s: &Snapshot) -> f64 {
    s.ending.as_ref().map_or(0.0, |e| e.score)
}

/// Ended by the agent or the environment (answered, stopped, environment done).
pub fn terminated(s: &Snapshot) -> bool {
    s.ending.as_ref().is_some_and(|e| {
        !matches!(
            e.end_reason,
            store::EndReason::MaxSteps | store::EndReason::Timeout
        )
    })
}

/// Cut off: the step limit or the idle limit.
pub fn truncated(s: &Snapshot) -> bool {
    s.ending.is_some() && !terminated(s)
}

/// The whole step answer of surfgym's routes.
pub fn step(s: &Snapshot) -> Value {
    json!({
        "observation": observation(s),
        "reward": reward(s),
        "terminated": terminated(s),
        "truncated": truncated(s),
        "info": info(s),
    })
}
