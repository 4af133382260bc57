//! `GET /api/triage`: failure triage over one campaign (`?campaign=`) or every campaign,
//! aggregated by the store.

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use store::Triage;
use uuid::Uuid;

use crate::AppState;
use crate::error::{ApiError, field};
use crate::extract::ApiQuery;

/// Parameters of `GET /api/triage`; any other is a 400.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TriageQuery {
    campaign: Option<String>,
}

/// `GET /api/triage[?campaign=…]`.
pub async fn get(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<TriageQuery>,
) -> Result<Json<Triage>, ApiError> {
    let campaign = q
        .campaign
        .map(|c| {
            Uuid::parse_str(&c).map_err(|_| field("campaign", "is not a campaign id (a UUID)"))
        })
        .transpose()?;
    let store = state.engine.store();
    if let Some(id) = campaign
        && store.get_campaign(id).await?.is_none()
    {
        return Err(ApiError::NotFound(format!("no campaign {id}")));
    }
    Ok(Json(store.triage(campaign).await?))
}

/// The OpenAPI entries of the triage and the campaign list's live progress.
pub(crate) fn openapi(doc: &mut serde_json::Value) {
    use serde_json::json;
    let ids = json!({"type": "array", "items": {"type": "string", "format": "uuid"}, "description": "a few example episodes"});
    let int = json!({"type": "integer"});
    let errors = json!({"type": "array", "items": {"type": "object", "properties": {
        "kind": {"type": "string"}, "episodes": int, "gave_up": int, "finished": int, "sample": {"type": "string"}, "examples": ids}}});
    doc["paths"]["/api/triage"] = json!({"get": {
        "summary": "failure triage of one campaign (or every campaign): finished episodes by end reason, infrastructure errors by kind, blocked pages by reason and site, rubric errors, page events (dialogs, blocked URLs, downloads, stopped scripts) by site and kind, and the rubric facts that fail most; each group with its counts and a few example episodes (at most group_limit groups per list)",
        "operationId": "getTriage",
        "parameters": [{"name": "campaign", "in": "query", "required": false, "description": "campaign id; every campaign when absent", "schema": {"type": "string", "format": "uuid"}}],
        "responses": {
            "200": {"description": "the triage", "content": {"application/json": {"schema": {"type": "object", "properties": {
                "campaign": {"type": ["string", "null"]},
                "totals": {"type": "object", "properties": {"episodes": int, "finished": int, "successes": int, "failed": int, "judge_errors": int, "infra_errors": int}},
                "end_reasons": {"type": "array", "items": {"type": "object", "properties": {"end_reason": {"type": "string"}, "episodes": int, "successes": int, "failures": int, "judge_errors": int, "examples": ids}}},
                "infra_failures": errors, "blocked": errors, "judge_errors": errors,
                "page_events": {"type": "array", "items": {"type": "object", "properties": {"site": {"type": "string"}, "kind": {"type": "string"}, "events": int, "steps": int, "episodes": int, "sample": {"type": ["string", "null"]}, "examples": ids}}},
                "facts": {"type": "array", "items": {"type": "object", "properties": {"task_id": {"type": "string"}, "group_id": {"type": "string"}, "fact_id": {"type": "string"}, "description": {"type": ["string", "null"]}, "failed": int, "passed": int, "unchecked": int, "examples": ids}}},
                "group_limit": int}}}}},
            "400": {"description": "a bad campaign id", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
            "404": {"description": "no such campaign", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}}});
    doc["paths"]["/api/campaigns/events"] = json!({"get": {
        "summary": "server-sent events for the campaign list: a `campaigns` event ({total, unfinished, active: [Campaign]}, active being the oldest 50 queued, running or paused campaigns) whenever it changes",
        "operationId": "campaignListEvents",
        "responses": {"200": {"description": "an event stream", "content": {"text/event-stream": {"schema": {"type": "string"}}}}}}});
}
