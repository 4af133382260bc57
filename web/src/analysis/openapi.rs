//! The analysis endpoints' parameters as the OpenAPI document lists them.

use serde_json::{Value, json};

fn q(name: &str, desc: &str, schema: Value) -> Value {
    json!({"name": name, "in": "query", "required": false, "description": desc, "schema": schema})
}

fn s() -> Value {
    json!({"type": "string"})
}

fn i() -> Value {
    json!({"type": "integer"})
}

fn scope() -> Vec<Value> {
    vec![
        q("task", "one task", s()),
        q("site", "website", s()),
        q(
            "difficulty",
            "easy, medium or hard",
            json!({"enum": ["easy", "medium", "hard"]}),
        ),
        q("split", "train or test", json!({"enum": ["train", "test"]})),
        q("tag", "tasks carrying this tag", s()),
    ]
}

/// The parameters of one endpoint (`analysis`, `episodes`, `plots`, `compare`).
pub fn openapi_params(endpoint: &str) -> Vec<Value> {
    let id = json!({"name": "id", "in": "path", "required": true, "description": "campaign id", "schema": s()});
    let order = q(
        "order",
        "asc (default) or desc",
        json!({"enum": ["asc", "desc"]}),
    );
    let mut p = Vec::new();
    match endpoint {
        "analysis" => {
            p.push(id);
            p.extend(scope());
            p.push(q(
                "k",
                "pass@k's k (1-10000; default: the campaign's rollouts per task)",
                i(),
            ));
            p.push(q(
                "sort",
                "task table order",
                json!({"enum": ["task", "site", "difficulty", "split", "episodes", "success_rate", "pass_at_k", "mean_score", "mean_steps", "end_reason"]}),
            ));
            p.push(order);
        }
        "episodes" => {
            p.push(id);
            p.push(q(
                "q",
                "text the instruction, final URL, answer or an error contains (any case)",
                s(),
            ));
            p.extend(scope());
            p.extend([
                q("success", "true or false", json!({"enum": ["true", "false"]})),
                q("status", "pending, running, finished, failed or cancelled", s()),
                q("end_reason", "answered, stopped, max_steps, policy_error, timeout or env_done", s()),
                q("steps_min", "at least this many steps", i()),
                q("steps_max", "at most this many steps", i()),
                q("from", "finished at or after (RFC 3339)", s()),
                q("to", "finished before (RFC 3339)", s()),
                q("phase", "observe, policy, act or judge: with ms_min / ms_max, episodes with a step (a judging) that took that long", s()),
                q("ms_min", "the phase took at least this many ms", i()),
                q("ms_max", "the phase took less than this many ms", i()),
                q("sort", "task, success, score, steps, duration, finished or end_reason", s()),
                order,
                q("limit", "items per page (1-500, default 50)", i()),
                q("offset", "items to skip (at most 1000000000)", i()),
            ]);
        }
        "plots" => {
            p.push(id);
            p.push(q(
                "buckets",
                "time slices of the timeline (1-200, default 20)",
                i(),
            ));
        }
        _ => {
            p.extend([
                q("a", "campaign A's id (required)", s()),
                q("b", "campaign B's id (required)", s()),
                q("limit", "tasks per page (1-500, default 500)", i()),
                q("offset", "tasks to skip (at most 1000000000)", i()),
            ]);
        }
    }
    p
}
