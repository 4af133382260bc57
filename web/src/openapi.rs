//! The OpenAPI 3.1 document served at `/api/openapi.json`. A test checks that it lists
//! exactly the routes the router has.

use serde_json::{Value, json};
use store::{EpisodeStatus, Stage, Status, StatusFilter};

fn obj(props: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": props, "required": required})
}

/// A campaign's episodes counted by status: one integer per [`EpisodeStatus`], all required.
fn episode_counts() -> Value {
    let words: Vec<&str> = EpisodeStatus::ALL.iter().map(|s| s.as_str()).collect();
    let props = words
        .iter()
        .map(|w| (w.to_string(), json!({"type": "integer"})))
        .collect::<serde_json::Map<_, _>>();
    obj(Value::Object(props), &words)
}

fn r(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

/// A replay step's schema (apart: the whole document in one `json!` passes its recursion
/// limit).
fn step_schema() -> Value {
    obj(
        json!({"idx": {"type": "integer"}, "url": {"type": "string"}, "title": {"type": "string"}, "screenshot": {"type": ["string", "null"]},
                "elements": {"type": "array"},
                "events": {"type": "array", "description": "What the page did on its own since the previous step: {kind: dialog|tab_opened|tab_closed|download|blocked|script_stopped|navigation_stopped, ...}"},
                "tabs": {"type": "array", "description": "Open tabs: {number, url, title, active}"},
                "ax_tree": {"type": ["string", "null"], "description": "Chromium's accessibility tree as the policy was shown it (one node a line, numbered elements as [N] role \"name\"), when the browsers read it (accessibility_tree, --ax-tree); at most 64 KiB, then a truncation line; null otherwise"},
                "action": {"type": "string"}, "thought": {"type": ["string", "null"]}, "raw_output": {"type": ["string", "null"]},
                "action_error": {"type": ["string", "null"]}, "click_x": {"type": ["number", "null"]}, "click_y": {"type": ["number", "null"]},
                "logprob": {"type": ["number", "null"]},
                "token_logprobs": {"type": ["array", "null"], "items": {"type": "number"}, "description": "log-probability of each generated token of raw_output, when the policy reported them"},
                "token_ids": {"type": ["array", "null"], "items": {"type": "integer"}, "description": "the generated tokens' ids in the policy model's vocabulary, paired with token_logprobs, when the policy reported them (ONNX policies; HTTP servers that honour return_tokens_as_token_ids)"},
                "prompt": {"type": ["string", "null"], "description": "the text a model policy was given (ONNX: the rendered chat template, one placeholder per image; HTTP: the user message's text)"},
                "observe_ms": {"type": "integer"}, "policy_ms": {"type": "integer"}, "act_ms": {"type": "integer"}}),
        &["idx", "url", "action"],
    )
}

fn page_of(name: &str) -> Value {
    obj(
        json!({"items": {"type": "array", "items": r(name)}, "total": {"type": "integer"}, "limit": {"type": "integer"}, "offset": {"type": "integer"}}),
        &["items", "total", "limit", "offset"],
    )
}

fn ok(desc: &str, schema: Value) -> Value {
    json!({"description": desc, "content": {"application/json": {"schema": schema}}})
}

fn err(desc: &str) -> Value {
    ok(desc, r("Error"))
}

fn q(name: &str, desc: &str, schema: Value) -> Value {
    json!({"name": name, "in": "query", "required": false, "description": desc, "schema": schema})
}

fn id_param(desc: &str) -> Value {
    json!({"name": "id", "in": "path", "required": true, "description": desc, "schema": {"type": "string"}})
}

fn paging() -> Vec<Value> {
    vec![
        q(
            "limit",
            "items per page (1-500, default 50)",
            json!({"type": "integer"}),
        ),
        q("offset", "items to skip", json!({"type": "integer"})),
    ]
}

fn campaign_action(verb: &str, desc: &str) -> Value {
    json!({"post": {"summary": desc, "operationId": format!("{verb}Campaign"), "parameters": [id_param("campaign id")],
        "responses": {"200": ok("the campaign now", r("Campaign")), "404": err("no such campaign"), "409": err("not allowed in the campaign's status")}}})
}

/// The document.
pub fn document() -> Value {
    let mut task_list_params = vec![
        q("site", "website", json!({"type": "string"})),
        q("tag", "tag the task carries", json!({"type": "string"})),
        q(
            "difficulty",
            "easy, medium or hard",
            json!({"enum": ["easy", "medium", "hard"]}),
        ),
        q("split", "train or test", json!({"enum": ["train", "test"]})),
    ];
    task_list_params.extend(paging());
    let mut episode_params = vec![
        q(
            "campaign",
            "campaign id",
            json!({"type": "string", "format": "uuid"}),
        ),
        q("task", "task id", json!({"type": "string"})),
        q(
            "status",
            "pending, running, finished, failed, cancelled; judged (finished and scored) or judge_error (finished, rubric not evaluable)",
            json!({"enum": StatusFilter::words()}),
        ),
        q("success", "judged successful", json!({"type": "boolean"})),
        q(
            "split",
            "the task's split: train or test",
            json!({"enum": ["train", "test"]}),
        ),
    ];
    let export_params = vec![
        id_param("campaign id"),
        q("success", "judged successful", json!({"type": "boolean"})),
        q(
            "split",
            "the task's split: train or test",
            json!({"enum": ["train", "test"]}),
        ),
    ];
    episode_params.extend(paging());
    let text_match = obj(
        json!({"equals": {"type": "string"}, "contains": {"type": "string"}, "regex": {"type": "string"}, "case_sensitive": {"type": "boolean"}}),
        &[],
    );
    let mut doc = json!({
        "openapi": "3.1.0",
        "info": {"title": "surfgym", "version": env!("CARGO_PKG_VERSION"),
            "description": "Register web tasks, run rollout campaigns in real browsers, read judged episodes. Errors are {\"error\": {\"type\", \"message\", \"fields\": [{\"field\", \"message\"}]}}. Every write (POST, DELETE), body-less ones included, declares Content-Type: application/json (the import: application/x-ndjson, application/jsonl or application/json), else 415; a write a browser labels as coming from another origin (Origin, Sec-Fetch-Site) is refused with 403; an unknown query parameter of a list, or a NUL in any parameter, is a 400 naming it. Authentication: an API token (`surfgym token create --scope read|write|admin`) as `Authorization: Bearer <token>`, or the dashboard's sign-in cookie. On loopback reads are open and writes need scope write; beyond loopback every route needs a token (reads: read); /api/tokens needs admin; /api/health, /api/session and the dashboard's files are open. 401 (WWW-Authenticate: Bearer): no, unknown or revoked token; 403 insufficient_scope: the token's scope is too low."},
        "paths": {
            "/api/health": {"get": {"summary": "liveness", "operationId": "health", "responses": {"200": ok("up", obj(json!({"status": {"type": "string"}}), &["status"]))}}},
            "/api/policies": {"get": {"summary": "policies campaigns may use", "operationId": "listPolicies",
                "responses": {"200": ok("names", obj(json!({"policies": {"type": "array", "items": {"type": "string"}}}), &["policies"]))}}},
            "/api/tasks": {
                "post": {"summary": "register a task", "operationId": "createTask",
                    "requestBody": {"required": true, "content": {"application/json": {"schema": r("TaskSpec")}}},
                    "responses": {"201": ok("stored", r("Task")), "400": err("invalid; `fields` names each bad field"), "409": err("id taken")}},
                "get": {"summary": "list tasks", "operationId": "listTasks", "parameters": task_list_params,
                    "responses": {"200": ok("a page", page_of("Task")), "400": err("bad filter")}}
            },
            "/api/tasks/import": {"post": {"summary": "import tasks (JSON Lines, a JSON array, pretty-printed objects, MiniWoB++ task names); good items are stored, bad ones reported",
                "operationId": "importTasks", "parameters": [
                    q("replace", "overwrite tasks with the same id", json!({"type": "boolean"})),
                    q("format", "input format", json!({"enum": ["surfgym", "webvoyager", "webarena", "webgym", "miniwob"]})),
                    q("bases", "WebArena / MiniWoB++ URL placeholders, KEY=URL pairs separated by commas", json!({"type": "string"})),
                    q("split", "the imported tasks' split (default: test for benchmark formats)", json!({"enum": ["train", "test"]}))],
                "requestBody": {"required": true, "content": {"application/x-ndjson": {"schema": {"type": "string"}}}},
                "responses": {"200": ok("per-line report", r("ImportReport")),
                    "400": err("empty body, or nothing imported: `fields` names each line's errors (`line N: field`)"),
                    "409": err("nothing imported: every task's id is taken")}}},
            "/api/tasks/{id}": {
                "get": {"summary": "one task", "operationId": "getTask", "parameters": [id_param("task id")],
                    "responses": {"200": ok("the task", r("Task")), "404": err("no such task")}},
                "delete": {"summary": "delete a task (its episodes stay)", "operationId": "deleteTask", "parameters": [id_param("task id")],
                    "responses": {"204": {"description": "deleted"}, "404": err("no such task")}}
            },
            "/api/campaigns": {
                "post": {"summary": "create a campaign; it runs in the background", "operationId": "createCampaign",
                    "requestBody": {"required": true, "content": {"application/json": {"schema": r("CampaignSpec")}}},
                    "responses": {"202": ok("queued", obj(json!({"id": {"type": "string", "format": "uuid"}, "status": {"type": "string"}, "url": {"type": "string"}}), &["id", "status"])),
                        "400": err("invalid; `fields` names each bad field")}},
                "get": {"summary": "list campaigns, newest first", "operationId": "listCampaigns", "parameters": paging(),
                    "responses": {"200": ok("a page", page_of("Campaign"))}}
            },
            "/api/campaigns/{id}": {"get": {"summary": "one campaign with counts, success rate and progress", "operationId": "getCampaign",
                "parameters": [id_param("campaign id")], "responses": {"200": ok("the campaign", r("Campaign")), "404": err("no such campaign")}}},
            "/api/campaigns/{id}/pause": campaign_action("pause", "pause: running episodes finish, no new ones start"),
            "/api/campaigns/{id}/resume": campaign_action("resume", "resume a paused campaign"),
            "/api/campaigns/{id}/cancel": campaign_action("cancel", "cancel: unfinished episodes are not run"),
            "/api/campaigns/{id}/events": {"get": {"summary": "server-sent events: a `campaign` event with the campaign's JSON whenever it changes, until it ends",
                "operationId": "campaignEvents", "parameters": [id_param("campaign id")],
                "responses": {"200": {"description": "an event stream", "content": {"text/event-stream": {"schema": {"type": "string"}}}}, "404": err("no such campaign")}}},
            "/api/campaigns/{id}/export": {"get": {"summary": "the campaign's finished episodes as JSON Lines, one EpisodeDetail per line (steps with raw outputs and per-token log-probabilities, verdicts, split), streamed in campaign order",
                "operationId": "exportCampaign", "parameters": export_params,
                "responses": {"200": {"description": "JSON Lines", "content": {"application/x-ndjson": {"schema": r("EpisodeDetail")}}}, "400": err("bad id or filter"), "404": err("no such campaign")}}},
            "/api/campaigns/{id}/policies": {"get": {"summary": "the policies the campaign's finished episodes ran under, most used first (more than one: its workers resolved its policy name to different models or settings)",
                "operationId": "campaignPolicies", "parameters": [id_param("campaign id")],
                "responses": {"200": ok("policies with episode counts", json!({"type": "array", "items": obj(json!({"card": r("PolicyCard"), "episodes": {"type": "integer"}}), &["card", "episodes"])})), "400": err("bad id"), "404": err("no such campaign")}}},
            "/api/campaigns/{id}/analysis": {"get": {"summary": "each task across its rollouts (success rate, unbiased pass@k, mean score and steps, most common end reason; sortable, filterable) and the outcomes by site, difficulty, split and tag, aggregated by the database",
                "operationId": "campaignAnalysis", "parameters": crate::analysis::openapi_params("analysis"),
                "responses": {"200": ok("tasks and breakdowns", json!({"type": "object"})), "400": err("a bad parameter, named"), "404": err("no such campaign")}}},
            "/api/campaigns/{id}/episodes": {"get": {"summary": "the campaign's episodes searched (instruction, URL, answer, error text), filtered and sorted, a page at a time",
                "operationId": "searchCampaignEpisodes", "parameters": crate::analysis::openapi_params("episodes"),
                "responses": {"200": ok("a page", page_of("EpisodeSummary")), "400": err("a bad parameter, named"), "404": err("no such campaign")}}},
            "/api/campaigns/{id}/plots": {"get": {"summary": "what the plots page draws: finished episodes and successes over the campaign's time, latency distributions of observe / policy / act / judge, steps per episode, success by difficulty",
                "operationId": "campaignPlots", "parameters": crate::analysis::openapi_params("plots"),
                "responses": {"200": ok("plot data", json!({"type": "object"})), "400": err("a bad parameter, named"), "404": err("no such campaign")}}},
            "/api/compare": {"get": {"summary": "two campaigns task by task, the tasks exactly one of them solved first",
                "operationId": "compareCampaigns", "parameters": crate::analysis::openapi_params("compare"),
                "responses": {"200": ok("counts and a page of tasks", json!({"type": "object"})), "400": err("a bad parameter, named"), "404": err("no such campaign")}}},
            "/metrics": {"get": {"summary": "Prometheus metrics: episodes, steps, retries, step latency split into policy / browser / judge / storage, queue depths, pool occupancy; training runs by state, and per run its iterations completed, last train and held-out success and update seconds",
                "operationId": "metrics", "responses": {"200": {"description": "Prometheus text format", "content": {"text/plain": {"schema": {"type": "string"}}}}}}},
            "/api/episodes": {"get": {"summary": "list episodes", "operationId": "listEpisodes", "parameters": episode_params,
                "responses": {"200": ok("a page", page_of("EpisodeSummary")), "400": err("bad filter")}}},
            "/api/episodes/{id}": {"get": {"summary": "an episode with steps and verdicts", "operationId": "getEpisode",
                "parameters": [id_param("episode id")], "responses": {"200": ok("the episode", r("EpisodeDetail")), "404": err("no such episode")}}},
            "/api/blobs/{hash}": {"get": {"summary": "a screenshot by content hash", "operationId": "getBlob",
                "parameters": [{"name": "hash", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[0-9a-f]{64}$"}}],
                "responses": {"200": {"description": "the image", "content": {"image/jpeg": {}, "image/png": {}}}, "404": err("no such blob")}}},
            "/api/openapi.json": {"get": {"summary": "this document", "operationId": "openapi", "responses": {"200": {"description": "OpenAPI 3.1"}}}}

        },
        "components": {"schemas": {
            "Error": obj(json!({"error": obj(json!({"type": {"type": "string"}, "message": {"type": "string"},
                "fields": {"type": "array", "items": obj(json!({"field": {"type": "string"}, "message": {"type": "string"}}), &["field", "message"])}}), &["type", "message", "fields"])}), &["error"]),
            "TextMatch": text_match,
            "Check": obj(json!({
                "type": {"enum": ["url", "page_text", "element", "answer"]},
                "exact": {"type": "string"}, "prefix": {"type": "string"}, "contains": {"type": "string"}, "regex": {"type": "string"},
                "scope": {"enum": ["final", "any"]}, "case_sensitive": {"type": "boolean"}, "selector": {"type": "string"},
                "exists": {"type": "boolean"}, "checked": {"type": "boolean"}, "value": r("TextMatch"), "text": r("TextMatch"),
                "equals": {"type": "string"}, "any_of": {"type": "array", "items": {"type": "string"}}, "number": {"type": "number"}, "tolerance": {"type": "number"}
            }), &["type"]),
            "Rubric": obj(json!({"groups": {"type": "array", "minItems": 1, "items": obj(json!({
                "id": {"type": "string"}, "description": {"type": "string"}, "any": {"type": "boolean"},
                "facts": {"type": "array", "minItems": 1, "items": obj(json!({"id": {"type": "string"}, "description": {"type": "string"}, "weight": {"type": "number"}, "check": r("Check")}), &["check"])}
            }), &["facts"])}}), &["groups"]),
            "TaskSpec": obj(json!({
                "id": {"type": "string"}, "site": {"type": "string"}, "instruction": {"type": "string"}, "start_url": {"type": "string", "format": "uri"},
                "rubric": r("Rubric"), "difficulty": {"enum": ["easy", "medium", "hard"]}, "tags": {"type": "array", "items": {"type": "string"}},
                "split": {"enum": ["train", "test"]}, "max_steps": {"type": "integer"}, "reference_solution": {"type": "array", "items": {"type": "string"}},
                "reference_answer": {"type": "string"},
                "setup": {"type": "object", "description": "`{\"type\": \"actions\", \"actions\": [\"goto(...)\", ...]}` prepares the episode's fresh browser context before its start page opens (1-50 actions, not steps of the episode; a failing one is a `setup` infrastructure failure); `{\"type\": \"miniwob\"}` starts a seeded MiniWoB++ episode"},
                "screen": r("Screen"),
                "audit": {"type": "object", "description": "what `surfgym tasks audit` accepts of its findings (`accept`: finding, fact, reason) and the declared labels of the reference solution's prefixes (`holds_after`, `holds_on`) and perturbations (docs/guides/judges.md)"}
            }), &["instruction", "start_url", "rubric"]),
            "Task": obj(json!({"id": {"type": "string"}, "site": {"type": "string"}, "instruction": {"type": "string"}, "start_url": {"type": "string"},
                "difficulty": {"type": "string"}, "split": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}, "spec": r("TaskSpec"),
                "created_at": {"type": "string", "format": "date-time"}}), &["id", "site", "instruction", "start_url", "difficulty", "split", "tags", "spec", "created_at"]),
            "ImportReport": obj(json!({"imported": {"type": "integer"}, "failed": {"type": "integer"}, "lines": {"type": "array", "items": obj(json!({
                "line": {"type": "integer"}, "status": {"enum": ["imported", "error"]}, "id": {"type": "string"},
                "errors": {"type": "array", "items": obj(json!({"field": {"type": "string"}, "message": {"type": "string"}}), &["field", "message"])},
                "warnings": {"type": "array", "items": obj(json!({"field": {"type": "string"}, "message": {"type": "string"}}), &["field", "message"])}}), &["line", "status"])}}),
                &["imported", "failed", "lines"]),
            "Screen": obj(json!({"width": {"type": "integer", "minimum": 100, "maximum": 8192, "description": "viewport, CSS pixels"}, "height": {"type": "integer", "minimum": 100, "maximum": 8192},
                "device_scale": {"type": "number", "minimum": 0.25, "maximum": 4}, "screenshot_scale": {"type": "number", "minimum": 0.05, "maximum": 1}}), &["width", "height"]),
            "PolicyCard": obj(json!({"name": {"type": "string"}, "backend": {"type": "string", "description": "builtin, onnx, http, simulated, batched"},
                "model": {"type": "string", "description": "ONNX: the model directory's name; HTTP: the requests' model field"},
                "fingerprint": {"type": "string", "description": "ONNX: sha256 over the model files' paths, sizes and (sampled) bytes"},
                "endpoint": {"type": "string", "description": "HTTP: the server's base URL"},
                "sampling": obj(json!({"temperature": {"type": "number"}, "top_p": {"type": "number"}, "max_tokens": {"type": "integer"}}), &["temperature", "top_p", "max_tokens"]),
                "settings": {"type": "object", "description": "prompt, grounding, constrained decoding, device"}}), &["name", "backend"]),
            "CampaignSpec": obj(json!({
                "name": {"type": "string"},
                "tasks": obj(json!({"site": {"type": "string"}, "tag": {"type": "string"}, "difficulty": {"type": "string"}, "split": {"type": "string"}, "ids": {"type": "array", "items": {"type": "string"}}}), &[]),
                "policy": {"type": "string", "description": "see /api/policies (default random)"},
                "rollouts_per_task": {"type": "integer", "minimum": 1}, "max_steps": {"type": "integer", "minimum": 1},
                "concurrency": {"type": "integer", "minimum": 0}, "seed": {"type": "integer", "minimum": 0}, "max_attempts": {"type": "integer", "minimum": 1},
                "mode": {"enum": ["async", "lockstep"]}, "straggler_cutoff": {"type": "number", "description": "fraction of episodes done, e.g. 0.95"},
                "straggler_grace_secs": {"type": "integer", "minimum": 0}, "judge": {"enum": ["exhaustive", "binary"]}, "critic": {"type": "boolean"},
                "screen": r("Screen"),
                "answer_checks": {"type": "integer", "minimum": 1, "maximum": 16, "description": "answers an agent may give per episode (default 1); each but the last is followed by a prompt to check the page again; the last one is judged"},
                "detect_blocks": {"type": "boolean", "description": "a page of a task's site that turns the agent away (CAPTCHA, bot or login wall, HTTP 401/403/429/451) ends the episode as blocked: an infrastructure outcome, retried and never scored (default true); docs/guides/live-web.md"},
                "confirm_blocks": {"type": "boolean", "description": "the model judge confirms each block the rules find, from the page's screenshot; a page it sees no wall on goes on as an ordinary page (default false; needs a model judge)"},
                "record": {"type": "boolean", "description": "record every exchange of the episodes' pages into a recording with the campaign's id (browsers started with --capture-traffic); docs/guides/live-web.md"},
                "replay": {"type": "string", "format": "uuid", "description": "answer the pages' requests from this recording (a recording campaign's id, or an imported HAR's) instead of the network"},
                "replay_unmatched": {"enum": ["fail", "not_found", "network"], "description": "what a replay does with a request its recording lacks (default fail)"},
                "allowed_domains": {"type": "array", "items": {"type": "string"}, "maxItems": 100, "description": "domains (with their subdomains) the episodes' pages may load documents from; a navigation elsewhere is refused at the browser; every task's start page must be on one (default: any)"}
            }), &[]),
            "Campaign": obj(json!({"id": {"type": "string", "format": "uuid"}, "name": {"type": "string"},
                "status": {"enum": Status::ALL}, "policy": {"type": "string"}, "config": {"type": "object"},
                "total_episodes": {"type": "integer"}, "counts": episode_counts(),
                "successes": {"type": "integer"}, "success_rate": {"type": ["number", "null"], "description": "over the episodes judged (finished minus judge_errors)"}, "judge_errors": {"type": "integer", "description": "finished episodes whose rubric could not be evaluated: not scored"}, "mean_score": {"type": ["number", "null"]}, "steps": {"type": "integer"},
                "judge_calls": {"type": "integer", "description": "model-judge calls made (questions asked; cache hits and blocking pages are not calls)"},
                "judge_facts": {"type": "integer", "description": "facts in words in the finished episodes' rubrics"},
                "judge_exhaustive_calls": {"type": "integer", "description": "calls an exhaustive judge makes on the same episodes"},
                "judge_calls_saved": {"type": "integer", "description": "judge_exhaustive_calls - judge_calls"},
                "progress": {"type": "number"}, "error": {"type": ["string", "null"]}, "created_at": {"type": "string"}, "started_at": {"type": ["string", "null"]}, "finished_at": {"type": ["string", "null"]}}),
                &["id", "name", "status", "policy", "config", "total_episodes", "counts", "successes", "progress"]),
            "EpisodeSummary": obj(json!({"id": {"type": "string"}, "campaign_id": {"type": "string"}, "task_id": {"type": "string"}, "site": {"type": "string"},
                "split": {"enum": ["train", "test"]}, "rollout": {"type": "integer"}, "seed": {"type": "integer"}, "status": {"enum": EpisodeStatus::ALL},
                "end_reason": {"type": ["string", "null"]}, "success": {"type": ["boolean", "null"]}, "score": {"type": ["number", "null"], "description": "partial credit; a lower bound when score_of_verified is set"},
                "score_of_verified": {"type": ["number", "null"], "description": "partial credit over the verified facts when binary judging left facts unchecked"},
                "final_answer": {"type": ["string", "null"]}, "step_count": {"type": "integer"}, "attempts": {"type": "integer"}, "last_error": {"type": ["string", "null"]}, "judge_error": {"type": ["string", "null"], "description": "the rubric could not be evaluated (a selector the browser rejects, a script that does not parse): no success, no score"},
                "duration_ms": {"type": ["integer", "null"]}, "started_at": {"type": ["string", "null"]}, "finished_at": {"type": ["string", "null"]}}),
                &["id", "campaign_id", "task_id", "status", "step_count"]),
            "Step": step_schema(),
            "Verdict": obj(json!({"judge": {"type": "string"}, "group_id": {"type": "string"}, "fact_id": {"type": "string"}, "description": {"type": ["string", "null"]},
                "passed": {"type": ["boolean", "null"], "description": "null: not checked (binary judging stopped early)"}, "evidence": {"type": "string"}, "reason": {"type": "string"}}), &["judge", "fact_id", "passed"]),
            "EpisodeDetail": {"allOf": [r("EpisodeSummary"), obj(json!({"instruction": {"type": "string"}, "final_url": {"type": ["string", "null"]},
                "final_screenshot": {"type": ["string", "null"]}, "screen": {"oneOf": [r("Screen"), {"type": "null"}], "description": "what the pages rendered at (the task's own screen, else the campaign's): element boxes and clicks are in its CSS pixels"}, "policy": {"oneOf": [r("PolicyCard"), {"type": "null"}], "description": "the policy that ran the episode, as its worker resolved the campaign's policy name"}, "steps": {"type": "array", "items": r("Step")}, "verdicts": {"type": "array", "items": r("Verdict")}}),
                &["instruction", "steps", "verdicts"])]}
        }}
    });
    training(&mut doc);
    add_auth(&mut doc);
    crate::triage::openapi(&mut doc);
    for (k, v) in session_paths().as_object().into_iter().flatten() {
        doc["paths"][k] = v.clone();
    }
    for (k, v) in session_schemas().as_object().into_iter().flatten() {
        doc["components"]["schemas"][k] = v.clone();
    }
    doc
}

fn run_action(verb: &str, desc: &str) -> Value {
    json!({"post": {"summary": desc, "operationId": format!("{verb}TrainingRun"), "parameters": [id_param("training run id")],
        "responses": {"200": ok("the run now", r("TrainingRunDetail")), "400": err("bad id"), "404": err("no such run"), "409": err("not allowed in the run's state")}}})
}

/// The training-run routes and schemas (kept apart: the main document is one macro call,
/// near the macro's recursion limit).
fn training(doc: &mut Value) {
    let paths = &mut doc["paths"];
    paths["/api/training-runs"] = json!({
        "post": {"summary": "create a training run (the same config as `surfgym train run`, validated the same way, its tasks and model checked); a server's executor runs it", "operationId": "createTrainingRun",
            "requestBody": {"required": true, "content": {"application/json": {"schema": r("RunConfig")}}},
            "responses": {"202": ok("queued", obj(json!({"id": {"type": "string", "format": "uuid"}, "state": {"type": "string"}, "url": {"type": "string"}}), &["id", "state"])),
                "400": err("invalid; `fields` names the bad field (unknown split, horizon <= 0, a filter naming no tasks, unknown objective, no held-out tasks, a model the trainer cannot train)")}},
        "get": {"summary": "list training runs, newest first", "operationId": "listTrainingRuns", "parameters": paging(),
            "responses": {"200": ok("a page", page_of("TrainingRun"))}}
    });
    paths["/api/training-runs/{id}"] = json!({"get": {"summary": "one training run: config, state, iterations with their figures, learning curve, campaigns still working",
        "operationId": "getTrainingRun", "parameters": [id_param("training run id")],
        "responses": {"200": ok("the run", r("TrainingRunDetail")), "400": err("bad id"), "404": err("no such run")}}});
    paths["/api/training-runs/{id}/pause"] = run_action(
        "pause",
        "pause: the phase in progress finishes, the next does not start",
    );
    paths["/api/training-runs/{id}/resume"] = run_action(
        "resume",
        "resume a paused (or failed) run: queued for a server's executor, which goes on at the iteration and phase it stopped in",
    );
    paths["/api/training-runs/{id}/cancel"] = run_action(
        "cancel",
        "cancel for good, with the run's unfinished campaigns",
    );
    paths["/api/training-runs/{id}/events"] = json!({"get": {"summary": "server-sent events: a `run` event with the run's JSON (as getTrainingRun answers, its campaigns' progress included) whenever it changes, until it ends",
        "operationId": "trainingRunEvents", "parameters": [id_param("training run id")],
        "responses": {"200": {"description": "an event stream", "content": {"text/event-stream": {"schema": {"type": "string"}}}}, "404": err("no such run")}}});
    let schemas = &mut doc["components"]["schemas"];
    schemas["RunConfig"] = json!({"type": "object", "description": "docs/guides/training.md#training-runs: name, model (a directory on the server), train (a task filter), held_out (\"seeds\" or {\"tasks\": filter}), iterations, rollouts_per_task, curriculum, eval_horizon, eval_rollouts, eval_answer_checks, objective (fbc or grpo), fbc_iterations, demonstrator (miniwob-solver or scripted: the FBC iterations roll it out), grpo_k, lr, epochs, micro_batch, flat_task_weight, policy, seed, trainer, overlap ({\"max_staleness\": N >= 1}), max_env_steps (an environment-step budget), devices ({\"policy\": cpu|cuda, \"policy_threads\", \"train\": cpu|cuda|cuda:N, \"precision\"}), web ({\"record\", \"replay\": recording id, \"replay_unmatched\", \"allowed_domains\", \"detect_blocks\"}: every campaign of the run takes them); unknown fields are errors",
        "required": ["name", "model", "train", "held_out", "iterations", "curriculum", "eval_horizon"]});
    schemas["TrainingRun"] = obj(
        json!({"id": {"type": "string", "format": "uuid"}, "name": {"type": "string"}, "config": r("RunConfig"),
        "state": {"enum": Status::ALL}, "version": {"type": ["string", "null"], "description": "the newest published version (null: the base model)"},
        "error": {"type": ["string", "null"]}, "created_at": {"type": "string"}, "updated_at": {"type": "string"}}),
        &["id", "name", "config", "state"],
    );
    schemas["TrainingIteration"] = obj(
        json!({"idx": {"type": "integer", "description": "0: the untrained model's evaluation"}, "phase": {"enum": Stage::ALL},
        "horizons": {"type": "object", "description": "each train task's horizon"}, "rollout_campaigns": {"type": "array", "items": {"type": "string", "format": "uuid"}},
        "eval_campaign": {"type": ["string", "null"]}, "parent_version": {"type": ["string", "null"]}, "version": {"type": ["string", "null"]},
        "samples": {"type": ["integer", "null"]}, "dropped": {"type": ["object", "null"]}, "loss": {"type": ["number", "null"]},
        "train_success": {"type": ["number", "null"]}, "eval_success": {"type": ["number", "null"]}, "env_steps": {"type": ["integer", "null"]},
        "rollout_ms": {"type": ["integer", "null"]}, "judge_ms": {"type": ["integer", "null"], "description": "judging time summed over the rollouts' episodes (inside rollout_ms)"}, "train_ms": {"type": ["integer", "null"]}, "eval_ms": {"type": ["integer", "null"]}, "report": {"type": ["object", "null"]}}),
        &["idx", "phase"],
    );
    schemas["TrainingRunDetail"] = json!({"allOf": [r("TrainingRun"), obj(json!({
        "iterations": {"type": "array", "items": r("TrainingIteration")},
        "curve": {"type": "array", "items": obj(json!({"iteration": {"type": "integer"}, "env_steps": {"type": "integer", "description": "cumulative"},
            "train_success": {"type": ["number", "null"]}, "eval_success": {"type": ["number", "null"]}, "loss": {"type": ["number", "null"]},
            "samples": {"type": ["integer", "null"]}, "horizon": {"type": ["array", "null"], "description": "[shortest, mean, longest]"},
            "eval_campaign": {"type": ["string", "null"]}, "done": {"type": "boolean"}}), &["iteration", "env_steps", "done"])},
        "active_campaigns": {"type": "array", "items": r("Campaign")}}), &["iterations", "curve", "active_campaigns"])]});
}

/// The token and sign-in routes, their schemas and the security schemes (apart: one
/// `json!` of the whole document would pass the macro's recursion limit).
fn add_auth(doc: &mut Value) {
    let token_list = json!({"type": "array", "items": r("Token")});
    let new_token = obj(
        json!({"scope": {"enum": ["read", "write", "admin"]}, "name": {"type": "string"}}),
        &["scope"],
    );
    let created = json!({"allOf": [r("Token"), obj(json!({"token": {"type": "string", "description": "the secret, for Authorization: Bearer"}}), &["token"])]});
    let sign_in = obj(json!({"token": {"type": "string"}}), &["token"]);
    let paths = json!({
        "/api/recordings": {"get": {"summary": "recordings of web state, newest first: a recording campaign's (its id is the campaign's) or an imported HAR's; docs/guides/live-web.md", "operationId": "listRecordings",
            "responses": {"200": ok("recordings", json!({"type": "array", "items": {"type": "object", "properties": {"id": {"type": "string", "format": "uuid"}, "name": {"type": "string"}, "campaign_id": {"type": ["string", "null"], "format": "uuid"}, "exchanges": {"type": "integer"}}}}))}}},
        "/api/recordings/import": {"post": {"summary": "import a HAR 1.2 file (bodies embedded, as Playwright and browsers' developer tools write them) as a recording campaigns can replay (`replay` in a campaign); ?name=N labels it", "operationId": "importRecording",
            "parameters": [{"name": "name", "in": "query", "required": false, "schema": {"type": "string"}}],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "description": "a HAR 1.2 log"}}}},
            "responses": {"201": ok("the new recording", json!({"type": "object", "properties": {"id": {"type": "string", "format": "uuid"}, "name": {"type": "string"}, "exchanges": {"type": "integer"}}})), "400": err("not a HAR file, or an entry that cannot be replayed (the field names the entry: log.entries[3].response.status)"), "413": err("over 64 MiB")}}},
        "/api/recordings/{id}/har": {"get": {"summary": "a recording as a HAR 1.2 log; ?episode=ID for one episode's exchanges", "operationId": "exportRecording",
            "parameters": [id_param("recording id (a recording campaign's id, or an imported one's)"), {"name": "episode", "in": "query", "required": false, "schema": {"type": "string", "format": "uuid"}}],
            "responses": {"200": ok("the HAR log", json!({"type": "object"})), "400": err("an id is not a UUID"), "404": err("no such recording")}}},
        "/api/tokens": {
            "get": {"summary": "every API token, newest first (never a secret); scope admin", "operationId": "listTokens",
                "responses": {"200": ok("tokens", token_list), "401": err("no valid token"), "403": err("scope below admin")}},
            "post": {"summary": "create an API token; the secret is in this response only; scope admin", "operationId": "createToken",
                "requestBody": {"required": true, "content": {"application/json": {"schema": new_token}}},
                "responses": {"201": ok("created", created), "400": err("bad scope or name"), "401": err("no valid token"), "403": err("scope below admin")}}
        },
        "/api/tokens/{id}": {"delete": {"summary": "revoke a token (by id, or by its prefix when unique); scope admin", "operationId": "revokeToken",
            "parameters": [id_param("token id or prefix")],
            "responses": {"200": ok("the revoked token", r("Token")), "404": err("no such token"), "409": err("the prefix matches several tokens")}}},
        "/api/session": {
            "get": {"summary": "the server's authentication mode and the token this client is signed in with", "operationId": "getSession",
                "responses": {"200": ok("the session", r("Session"))}},
            "post": {"summary": "dashboard sign-in: checks a token and sets the HttpOnly, SameSite=Strict cookie surfgym_session", "operationId": "signIn",
                "requestBody": {"required": true, "content": {"application/json": {"schema": sign_in}}},
                "responses": {"200": ok("signed in", r("Session")), "401": err("not a valid token")}},
            "delete": {"summary": "sign out: clears the cookie", "operationId": "signOut", "responses": {"200": ok("signed out", r("Session"))}}
        }
    });
    let token = obj(
        json!({"id": {"type": "string", "format": "uuid"}, "name": {"type": "string"}, "scope": {"enum": ["read", "write", "admin"]},
            "prefix": {"type": "string", "description": "the token's first characters"}, "created_at": {"type": "string"},
            "last_used_at": {"type": ["string", "null"]}, "revoked_at": {"type": ["string", "null"]}}),
        &["id", "name", "scope", "prefix", "created_at"],
    );
    let session = obj(
        json!({"access": {"enum": ["open", "writes", "everything"], "description": "open: no token needed (--no-auth); writes: writes need one (loopback); everything: every route does"},
            "token": {"oneOf": [r("Token"), {"type": "null"}]}}),
        &["access", "token"],
    );
    for (k, v) in paths.as_object().into_iter().flatten() {
        doc["paths"][k] = v.clone();
    }
    doc["components"]["schemas"]["Token"] = token;
    doc["components"]["schemas"]["Session"] = session;
    doc["components"]["securitySchemes"] = json!({
        "bearer": {"type": "http", "scheme": "bearer", "description": "an API token (sgt_...)"},
        "cookie": {"type": "apiKey", "in": "cookie", "name": "surfgym_session", "description": "the dashboard's sign-in"}
    });
    doc["security"] = json!([{"bearer": []}, {"cookie": []}]);
}

/// The environment-session routes (`/api/sessions`, `/openenv`), apart from the main
/// document's macro call (which is at `json!`'s recursion limit).
fn session_paths() -> Value {
    json!({
            "/api/sessions": {
                "post": {"summary": "open an environment session: an episode driven one action at a time by this client (docs/reference/sessions.md)", "operationId": "openSession",
                    "requestBody": {"required": true, "content": {"application/json": {"schema": r("SessionRequest")}}},
                    "responses": {"201": ok("opened, with the first observation", r("SessionOpened")),
                        "400": err("invalid; `fields` names each bad field"), "429": err("capacity: the server's or this token's limit on open sessions"),
                        "503": err("the browser failed; the episode is recorded as failed")}},
                "get": {"summary": "this client's open sessions and the limits", "operationId": "listSessions",
                    "responses": {"200": ok("sessions", obj(json!({"items": {"type": "array", "items": r("SessionState")}, "open_on_server": {"type": "integer"}, "limits": {"type": "object"}}), &["items", "limits"]))}}
            },
            "/api/sessions/{id}": {
                "get": {"summary": "a session's state", "operationId": "getSession", "parameters": [id_param("session id")],
                    "responses": {"200": ok("the state", r("SessionState")), "400": err("bad id"), "403": err("another token's session"), "404": err("no open session")}},
                "delete": {"summary": "end a session now: judged and stored as it stands", "operationId": "closeSession", "parameters": [id_param("session id")],
                    "responses": {"200": ok("the final step", r("SessionStep")), "403": err("another token's session"), "404": err("no open session"), "409": err("a step is running")}}
            },
            "/api/sessions/{id}/step": {"post": {"summary": "one action; a bad action is an error observation, not a dead session", "operationId": "stepSession",
                "parameters": [id_param("session id")],
                "requestBody": {"required": true, "content": {"application/json": {"schema": obj(json!({"action": {"type": "string"}}), &["action"])}}},
                "responses": {"200": ok("observation, reward, terminated, truncated, info", r("SessionStep")), "400": err("bad body"),
                    "403": err("another token's session"), "404": err("no open session"), "409": err("a step of this session is running"),
                    "503": err("the browser failed; the episode is recorded as failed")}}},
            "/openenv/health": {"get": {"summary": "OpenEnv: health", "operationId": "openenvHealth", "responses": {"200": ok("healthy", obj(json!({"status": {"type": "string"}}), &["status"]))}}},
            "/openenv/metadata": {"get": {"summary": "OpenEnv: the environment's name and description", "operationId": "openenvMetadata", "responses": {"200": ok("metadata", json!({"type": "object"}))}}},
            "/openenv/schema": {"get": {"summary": "OpenEnv: action, observation and state schemas", "operationId": "openenvSchema", "responses": {"200": ok("schemas", json!({"type": "object"}))}}},
            "/openenv/reset": {"post": {"summary": "OpenEnv: open a session (BrowserGym dialect) with {task_id, seed}; given session_id, that session ends first", "operationId": "openenvReset",
                "requestBody": {"required": true, "content": {"application/json": {"schema": json!({"type": "object"})}}},
                "responses": {"200": ok("{observation, reward, done, metadata: {session_id, ...}}", json!({"type": "object"})), "400": err("invalid"), "429": err("capacity")}}},
            "/openenv/step": {"post": {"summary": "OpenEnv: one action {action: {action_str}, session_id}", "operationId": "openenvStep",
                "requestBody": {"required": true, "content": {"application/json": {"schema": json!({"type": "object"})}}},
                "responses": {"200": ok("{observation, reward, done, metadata}", json!({"type": "object"})), "400": err("invalid"), "403": err("another token's session"), "404": err("no open session")}}},
            "/openenv/state": {"get": {"summary": "OpenEnv: a session's state", "operationId": "openenvState",
                "parameters": [q("session_id", "the session", json!({"type": "string", "format": "uuid"}))],
                "responses": {"200": ok("state", r("SessionState")), "400": err("bad session_id"), "403": err("another token's session"), "404": err("no open session")}}},
            "/openenv/ws": {"get": {"summary": "OpenEnv's WebSocket: {type: reset|step|state|close, data} messages, one session per socket (needs scope write)", "operationId": "openenvWebSocket",
                "responses": {"101": {"description": "switching to the WebSocket protocol"}}}}
    })
}

/// The schemas of [`session_paths`].
fn session_schemas() -> Value {
    json!({
            "SessionRequest": obj(json!({
                "task_id": {"type": "string"}, "task": r("TaskSpec"),
                "seed": {"type": "integer", "minimum": 0}, "max_steps": {"type": "integer", "minimum": 1, "maximum": 100},
                "dialect": {"enum": ["surfgym", "browsergym"]},
                "observe": obj(json!({"screenshot": {"type": "boolean"}, "set_of_marks": {"type": "boolean"}, "elements": {"type": "boolean"},
                    "ax_tree": {"type": "boolean"}, "screen": {"type": "object"}}), &[])}), &[]),
            "SessionOpened": obj(json!({"session_id": {"type": "string", "format": "uuid"}, "episode_id": {"type": "string", "format": "uuid"},
                "campaign_id": {"type": "string", "format": "uuid"}, "task_id": {"type": "string"}, "observation": {"type": "object"}, "info": {"type": "object"}}),
                &["session_id", "episode_id", "campaign_id", "task_id", "observation", "info"]),
            "SessionStep": obj(json!({"observation": {"type": "object"}, "reward": {"type": "number"}, "terminated": {"type": "boolean"},
                "truncated": {"type": "boolean"}, "info": {"type": "object"}}), &["observation", "reward", "terminated", "truncated", "info"]),
            "SessionState": obj(json!({"session_id": {"type": "string", "format": "uuid"}, "episode_id": {"type": "string", "format": "uuid"},
                "campaign_id": {"type": "string", "format": "uuid"}, "task_id": {"type": "string"}, "seed": {"type": "integer"},
                "dialect": {"enum": ["surfgym", "browsergym"]}, "step_count": {"type": ["integer", "null"]}, "max_steps": {"type": "integer"},
                "age_secs": {"type": "number"}, "idle_secs": {"type": "number"}}), &["session_id", "episode_id", "task_id", "max_steps"])
    })
}
