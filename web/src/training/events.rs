//! Live views of training runs: server-sent events of one run, and the runs' figures for
//! Prometheus. Both read Postgres, so they show runs whichever process executes them.

use std::convert::Infallible;
use std::fmt::Write;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use store::{Status, Store};

use super::api::parse_id;
use super::detail::detail;
use crate::AppState;
use crate::error::ApiError;

/// `GET /api/training-runs/{id}/events`: a `run` event with the run's JSON (as `GET
/// /api/training-runs/{id}` answers) whenever it changes, its campaigns' progress
/// included (checked every second), ending after the run ends.
pub async fn run_events(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let id = parse_id(&id)?;
    let store = state.engine.store().clone();
    detail(&store, id).await?;
    let stream = futures::stream::unfold(
        (store, None::<String>, false),
        move |(store, last, done)| async move {
            if done {
                return None;
            }
            loop {
                // Gone or unreadable: end the stream; the page keeps what it shows.
                let d = detail(&store, id).await.ok()?;
                let json = serde_json::to_string(&d).unwrap_or_default();
                let ended = d.run.state.is_ended();
                if last.as_deref() != Some(json.as_str()) {
                    let event = Event::default().event("run").data(json.clone());
                    return Some((Ok(event), (store, Some(json), ended)));
                }
                if ended {
                    return None;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        },
    );
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// A per-run series: name, help, type, and its value for a run.
type Series = (
    &'static str,
    &'static str,
    &'static str,
    fn(&store::RunFigures) -> Option<f64>,
);

/// A Prometheus label value.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The training runs' part of `/metrics` (empty if the store cannot be read: the
/// engine's own figures still answer).
pub async fn metrics_text(store: &Store) -> String {
    let (Ok(states), Ok(runs)) = (store.runs_by_state().await, store.run_figures().await) else {
        return String::new();
    };
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# HELP surfgym_training_runs Training runs by state.\n# TYPE surfgym_training_runs gauge"
    );
    for s in Status::ALL {
        let n = states.iter().find(|(k, _)| k == s).map_or(0, |(_, n)| *n);
        let _ = writeln!(o, "surfgym_training_runs{{state=\"{s}\"}} {n}");
    }
    let series: [Series; 4] = [
        (
            "surfgym_training_iterations_completed",
            "Iterations finished per training run (iteration 0, the untrained evaluation, included).",
            "gauge",
            |r| Some(r.iterations_done as f64),
        ),
        (
            "surfgym_training_last_train_success",
            "Rollout success of the run's newest finished iteration.",
            "gauge",
            |r| r.last_train_success,
        ),
        (
            "surfgym_training_last_eval_success",
            "Greedy held-out success of the run's newest finished iteration.",
            "gauge",
            |r| r.last_eval_success,
        ),
        (
            "surfgym_training_update_seconds_total",
            "Wall time of the run's updates.",
            "counter",
            |r| Some(r.update_seconds),
        ),
    ];
    for (name, help, kind, value) in series {
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for r in &runs {
            if let Some(v) = value(r) {
                let _ = writeln!(
                    o,
                    "{name}{{run=\"{}\",name=\"{}\"}} {v}",
                    r.id,
                    label(&r.name),
                );
            }
        }
    }
    o
}
