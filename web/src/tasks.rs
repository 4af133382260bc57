//! `/api/tasks`: register, list, read, delete, import.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use store::{TaskFilter, TaskView};
use tasks::{Difficulty, FieldError, Split, Task, TaskSpec};

use crate::AppState;
use crate::error::{ApiError, field};
use crate::extract::{ApiJson, ApiQuery};
use crate::page::{Page, PageQuery};

/// Filters and page of `GET /api/tasks`; any other parameter is a 400 (a typo would
/// otherwise list everything).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskQuery {
    site: Option<String>,
    tag: Option<String>,
    difficulty: Option<String>,
    split: Option<String>,
    limit: Option<i64>,
    offset: Option<i64>,
}

impl TaskQuery {
    fn filter(self) -> Result<TaskFilter, ApiError> {
        if let Some(d) = &self.difficulty {
            Difficulty::parse(d)
                .ok_or_else(|| field("difficulty", "must be easy, medium or hard"))?;
        }
        Ok(TaskFilter {
            split: checked_split(self.split)?,
            site: self.site,
            tag: self.tag,
            difficulty: self.difficulty,
            ids: Vec::new(),
        })
    }
}

/// A `split` query parameter (tasks, episodes, exports), checked.
pub(crate) fn checked_split(split: Option<String>) -> Result<Option<String>, ApiError> {
    if let Some(s) = &split {
        Split::parse(s).ok_or_else(|| field("split", "must be train or test"))?;
    }
    Ok(split)
}

fn validate(body: serde_json::Value) -> Result<Task, ApiError> {
    let spec = TaskSpec::from_json(body).map_err(ApiError::Invalid)?;
    Task::try_from(spec).map_err(ApiError::Invalid)
}

/// `POST /api/tasks`: 201 with the stored task, 400 naming bad fields, 409 on a taken id.
pub async fn create(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<serde_json::Value>,
) -> Result<(StatusCode, Json<TaskView>), ApiError> {
    let task = validate(body)?;
    state.engine.store().insert_task(&task).await?;
    let view = state
        .engine
        .store()
        .get_task(task.id.as_str())
        .await?
        .ok_or_else(|| ApiError::Internal("task vanished after insert".into()))?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// `GET /api/tasks`.
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<TaskQuery>,
) -> Result<Json<Page<TaskView>>, ApiError> {
    let (limit, offset) = PageQuery {
        limit: q.limit,
        offset: q.offset,
    }
    .checked()?;
    let (items, total) = state
        .engine
        .store()
        .list_tasks(&q.filter()?, limit, offset)
        .await?;
    Ok(Json(Page {
        items,
        total,
        limit,
        offset,
    }))
}

/// `GET /api/tasks/{id}`.
pub async fn get(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<TaskView>, ApiError> {
    let task = state.engine.store().get_task(&id).await?;
    task.map(Json)
        .ok_or_else(|| ApiError::NotFound(format!("no task `{id}`")))
}

/// `DELETE /api/tasks/{id}`: 204; the task's episodes stay.
pub async fn delete(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    if state.engine.store().delete_task(&id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(format!("no task `{id}`")))
    }
}

/// `?replace=true` makes an import overwrite tasks with the same id; `format` picks the
/// input format (`surfgym`, `webvoyager`, `webarena`, `webgym`, `miniwob`); `bases` fills
/// WebArena's URL placeholders (`SHOPPING=http://...,GITLAB=http://...`) and MiniWoB++'s
/// (`MINIWOB=http://...`, where its `html/` is served); `split` (`train`, `test`) is the
/// imported tasks' split (default: `test` for benchmark formats).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportQuery {
    #[serde(default)]
    replace: bool,
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    bases: Option<String>,
    #[serde(default)]
    split: Option<String>,
}

/// One line's fate in an import.
#[derive(Debug, Serialize)]
pub struct ImportedLine {
    line: usize,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    errors: Vec<FieldError>,
    /// What the import could not carry over into an imported task.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<FieldError>,
}

/// The import report.
#[derive(Debug, Serialize)]
pub struct ImportReport {
    imported: usize,
    failed: usize,
    lines: Vec<ImportedLine>,
}

/// `POST /api/tasks/import`: good items are stored, bad ones reported; an import that
/// stores nothing is a 400 (409 when every item's id is taken) listing each line's errors.
pub async fn import(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<ImportQuery>,
    body: String,
) -> Result<Json<ImportReport>, ApiError> {
    use tasks::formats::{Format, ImportOptions};
    let format = match q.format.as_deref() {
        None => Format::Surfgym,
        Some(f) => Format::parse(f)
            .ok_or_else(|| field("format", format!("must be one of {}", Format::NAMES)))?,
    };
    let split = match q.split.as_deref() {
        None => None,
        Some(s) => Some(Split::parse(s).ok_or_else(|| field("split", "must be train or test"))?),
    };
    let mut bases = std::collections::BTreeMap::new();
    for pair in q
        .bases
        .as_deref()
        .unwrap_or_default()
        .split(',')
        .filter(|p| !p.trim().is_empty())
    {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| field("bases", "pairs are KEY=URL, separated by commas"))?;
        bases.insert(k.trim().to_string(), v.trim().to_string());
    }
    let opts = ImportOptions {
        bases,
        split,
        ..Default::default()
    };
    let parsed = tasks::formats::import(format, &body, &opts);
    if parsed.is_empty() {
        return Err(field("body", "no tasks: send one JSON task per line"));
    }
    let store = state.engine.store();
    let mut lines = Vec::with_capacity(parsed.len());
    for l in parsed {
        let out = match l.result {
            Err(errors) => ImportedLine {
                line: l.line,
                status: "error",
                id: None,
                errors,
                warnings: vec![],
            },
            Ok(task) => {
                let stored = if q.replace {
                    store.upsert_task(&task).await
                } else {
                    store.insert_task(&task).await
                };
                match stored {
                    Ok(()) => ImportedLine {
                        line: l.line,
                        status: "imported",
                        id: Some(task.id.to_string()),
                        errors: vec![],
                        warnings: l.warnings,
                    },
                    Err(store::StoreError::Conflict(m)) => ImportedLine {
                        line: l.line,
                        status: "error",
                        id: Some(task.id.to_string()),
                        errors: vec![FieldError {
                            field: "id".into(),
                            message: format!("{m} (use ?replace=true to overwrite)"),
                        }],
                        warnings: vec![],
                    },
                    Err(e) => return Err(e.into()),
                }
            }
        };
        lines.push(out);
    }
    let imported = lines.iter().filter(|l| l.status == "imported").count();
    if imported == 0 {
        return Err(nothing_imported(lines));
    }
    Ok(Json(ImportReport {
        imported,
        failed: lines.len() - imported,
        lines,
    }))
}

/// The error of an import that stored nothing: every line's errors, each field prefixed
/// with its line; a conflict when every item was refused for a taken id.
fn nothing_imported(lines: Vec<ImportedLine>) -> ApiError {
    let all_taken = lines
        .iter()
        .all(|l| l.id.is_some() && l.errors.iter().all(|e| e.field == "id"));
    let errors: Vec<FieldError> = lines
        .into_iter()
        .flat_map(|l| {
            l.errors.into_iter().map(move |e| FieldError {
                field: if e.field.is_empty() {
                    format!("line {}", l.line)
                } else {
                    format!("line {}: {}", l.line, e.field)
                },
                message: e.message,
            })
        })
        .collect();
    if all_taken {
        let first = errors.first().map(ToString::to_string).unwrap_or_default();
        return ApiError::Conflict(format!(
            "nothing imported: every task's id is taken ({first})"
        ));
    }
    ApiError::Invalid(errors)
}
