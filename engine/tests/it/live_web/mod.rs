//! The live web's ways, on local servers that answer like them, in real Chromium: pages
//! that turn the agent away (`blocked`), politeness per domain and a campaign's allowed
//! domains (`politeness`), record and replay of web state (`replay`), network faults
//! (`faults`).

mod blocked;
mod faults;
mod politeness;
mod replay;

use engine::Engine;

/// A task starting at `start`, whose scripted agent takes `solution`; its rubric wants the
/// Buy button clicked, which never happens: every episode that is scored fails.
pub(crate) async fn task(
    engine: &Engine,
    id: &str,
    instruction: &str,
    start: String,
    solution: &[&str],
) {
    let task = tasks::parse_task(
        &serde_json::json!({
            "id": id, "site": "walls", "instruction": instruction, "start_url": start,
            "reference_solution": solution,
            "rubric": {"groups": [{"facts": [
                {"id": "bought", "check": {"type": "url", "contains": "/bought"}}]}]}
        })
        .to_string(),
    )
    .unwrap();
    engine.store().upsert_task(&task).await.unwrap();
}
