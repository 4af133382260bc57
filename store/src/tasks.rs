//! Task rows.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::{Postgres, QueryBuilder};
use tasks::{Task, TaskSpec};

use super::{Store, StoreError};

/// Which tasks to list or run. Empty fields match everything; an unknown field is an error
/// (a misspelt filter would otherwise run every task), and so is anything but an object:
/// serde would read `["shop"]` as `{"site": "shop"}` (a struct from its fields in order).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TaskFilter {
    /// Website.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<String>,
    /// Tag the task must carry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// `easy`, `medium` or `hard`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difficulty: Option<String>,
    /// `train` or `test`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<String>,
    /// Explicit task ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<String>,
}

/// [`TaskFilter`]'s fields as serde reads them from an object.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FilterFields {
    #[serde(default)]
    site: Option<String>,
    #[serde(default)]
    tag: Option<String>,
    #[serde(default)]
    difficulty: Option<String>,
    #[serde(default)]
    split: Option<String>,
    #[serde(default)]
    ids: Vec<String>,
}

impl<'de> serde::Deserialize<'de> for TaskFilter {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Object;
        impl<'de> serde::de::Visitor<'de> for Object {
            type Value = TaskFilter;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of task filters (site, tag, difficulty, split, ids)")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<TaskFilter, A::Error> {
                let f = <FilterFields as serde::Deserialize>::deserialize(
                    serde::de::value::MapAccessDeserializer::new(map),
                )?;
                Ok(TaskFilter {
                    site: f.site,
                    tag: f.tag,
                    difficulty: f.difficulty,
                    split: f.split,
                    ids: f.ids,
                })
            }
        }
        d.deserialize_map(Object)
    }
}

/// A stored task as the API shows it.
#[derive(Debug, Clone, Serialize)]
pub struct TaskView {
    /// Identifier.
    pub id: String,
    /// Website.
    pub site: String,
    /// Instruction.
    pub instruction: String,
    /// Start URL.
    pub start_url: String,
    /// Difficulty band.
    pub difficulty: String,
    /// Split.
    pub split: String,
    /// Tags.
    pub tags: Vec<String>,
    /// The full task (rubric, reference solution...).
    pub spec: serde_json::Value,
    /// When it was registered.
    pub created_at: DateTime<Utc>,
}

#[derive(sqlx::FromRow)]
struct TaskRow {
    id: String,
    site: String,
    instruction: String,
    start_url: String,
    difficulty: String,
    split: String,
    tags: Vec<String>,
    spec: serde_json::Value,
    created_at: DateTime<Utc>,
    site_bases: Option<serde_json::Value>,
}

impl Store {
    /// The task in `r` as this process would run it (its URLs on this process's sites).
    fn view(&self, r: TaskRow) -> TaskView {
        let bases = r.site_bases.as_ref();
        let start_url = self
            .local_sites
            .localize(r.start_url.clone().into(), bases)
            .as_str()
            .map_or(r.start_url, str::to_string);
        TaskView {
            id: r.id,
            site: r.site,
            instruction: r.instruction,
            start_url,
            difficulty: r.difficulty,
            split: r.split,
            tags: r.tags,
            spec: self.local_sites.localize(r.spec, bases),
            created_at: r.created_at,
        }
    }
}

const COLUMNS: &str =
    "id, site, instruction, start_url, difficulty, split, tags, spec, created_at, site_bases";

fn push_filter(q: &mut QueryBuilder<'_, Postgres>, f: &TaskFilter) {
    q.push(" WHERE deleted_at IS NULL");
    if let Some(site) = &f.site {
        q.push(" AND site = ").push_bind(site.clone());
    }
    if let Some(tag) = &f.tag {
        q.push(" AND ").push_bind(tag.clone()).push(" = ANY(tags)");
    }
    if let Some(d) = &f.difficulty {
        q.push(" AND difficulty = ").push_bind(d.clone());
    }
    if let Some(s) = &f.split {
        q.push(" AND split = ").push_bind(s.clone());
    }
    if !f.ids.is_empty() {
        q.push(" AND id = ANY(").push_bind(f.ids.clone()).push(")");
    }
}

fn spec_json(task: &Task) -> serde_json::Value {
    serde_json::to_value(task.to_spec()).expect("task specs serialize")
}

impl Store {
    /// Registers a new task; a live task with the same id is a conflict. A deleted one
    /// is replaced.
    pub async fn insert_task(&self, task: &Task) -> Result<(), StoreError> {
        let done = sqlx::query(
            "INSERT INTO tasks (id, site, instruction, start_url, difficulty, split, tags, spec)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (id) DO UPDATE SET site = EXCLUDED.site, instruction = EXCLUDED.instruction,
                start_url = EXCLUDED.start_url, difficulty = EXCLUDED.difficulty, split = EXCLUDED.split,
                tags = EXCLUDED.tags, spec = EXCLUDED.spec, created_at = now(), deleted_at = NULL
             WHERE tasks.deleted_at IS NOT NULL",
        )
        .bind(task.id.as_str())
        .bind(&task.site)
        .bind(&task.instruction)
        .bind(task.start_url.as_str())
        .bind(task.difficulty.as_str())
        .bind(task.split.as_str())
        .bind(&task.tags)
        .bind(spec_json(task))
        .execute(&self.pool)
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::Conflict(format!(
                "a task with id `{}` already exists",
                task.id
            )));
        }
        Ok(())
    }

    /// Registers or replaces a task as given.
    pub async fn upsert_task(&self, task: &Task) -> Result<(), StoreError> {
        self.upsert_task_resolved(task, None).await
    }

    /// Registers or replaces a task whose URLs were resolved against `bases` (site → base
    /// URL): the bundled suite and MiniWoB++, re-registered on every start with the
    /// starting process's ports. Processes that serve those sites themselves read it with
    /// their own bases (`local_sites`).
    pub async fn upsert_task_resolved(
        &self,
        task: &Task,
        bases: Option<&std::collections::BTreeMap<String, String>>,
    ) -> Result<(), StoreError> {
        let bases = bases.map(|b| serde_json::to_value(b).expect("a map of strings serializes"));
        sqlx::query(
            "INSERT INTO tasks (id, site, instruction, start_url, difficulty, split, tags, spec, site_bases)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
             ON CONFLICT (id) DO UPDATE SET site = EXCLUDED.site, instruction = EXCLUDED.instruction,
                start_url = EXCLUDED.start_url, difficulty = EXCLUDED.difficulty, split = EXCLUDED.split,
                tags = EXCLUDED.tags, spec = EXCLUDED.spec, site_bases = EXCLUDED.site_bases,
                deleted_at = NULL",
        )
        .bind(task.id.as_str())
        .bind(&task.site)
        .bind(&task.instruction)
        .bind(task.start_url.as_str())
        .bind(task.difficulty.as_str())
        .bind(task.split.as_str())
        .bind(&task.tags)
        .bind(spec_json(task))
        .bind(bases)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// One live task.
    pub async fn get_task(&self, id: &str) -> Result<Option<TaskView>, StoreError> {
        let row: Option<TaskRow> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM tasks WHERE id = $1 AND deleted_at IS NULL"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|r| self.view(r)))
    }

    /// A page of live tasks matching the filter, ordered by id, and the total count.
    pub async fn list_tasks(
        &self,
        filter: &TaskFilter,
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<TaskView>, i64), StoreError> {
        let mut q = QueryBuilder::new(format!("SELECT {COLUMNS} FROM tasks"));
        push_filter(&mut q, filter);
        q.push(" ORDER BY id LIMIT ")
            .push_bind(limit)
            .push(" OFFSET ")
            .push_bind(offset);
        let rows: Vec<TaskRow> = q.build_query_as().fetch_all(&self.pool).await?;
        let mut c = QueryBuilder::new("SELECT count(*) FROM tasks");
        push_filter(&mut c, filter);
        let (total,): (i64,) = c.build_query_as().fetch_one(&self.pool).await?;
        Ok((rows.into_iter().map(|r| self.view(r)).collect(), total))
    }

    /// Every live task matching the filter, validated back into [`Task`]s.
    pub async fn load_tasks(&self, filter: &TaskFilter) -> Result<Vec<Task>, StoreError> {
        let mut q = QueryBuilder::new("SELECT spec, site_bases FROM tasks");
        push_filter(&mut q, filter);
        q.push(" ORDER BY id");
        let rows: Vec<SpecRow> = q.build_query_as().fetch_all(&self.pool).await?;
        rows.into_iter().map(|r| self.task_from_row(r)).collect()
    }

    /// One task by id, deleted or not (episodes keep their task).
    pub async fn load_task(&self, id: &str) -> Result<Option<Task>, StoreError> {
        let row: Option<SpecRow> =
            sqlx::query_as("SELECT spec, site_bases FROM tasks WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
        row.map(|r| self.task_from_row(r)).transpose()
    }

    /// Hides a task from listings and new campaigns; its episodes stay. False if not found.
    pub async fn delete_task(&self, id: &str) -> Result<bool, StoreError> {
        let done =
            sqlx::query("UPDATE tasks SET deleted_at = now() WHERE id = $1 AND deleted_at IS NULL")
                .bind(id)
                .execute(&self.pool)
                .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Distinct sites with live tasks, and how many each has.
    pub async fn task_sites(&self) -> Result<Vec<(String, i64)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT site, count(*) FROM tasks WHERE deleted_at IS NULL GROUP BY site ORDER BY site",
        )
        .fetch_all(&self.pool)
        .await?)
    }
}

/// A task's spec and the bases it was resolved against.
type SpecRow = (serde_json::Value, Option<serde_json::Value>);

impl Store {
    /// The task in `row`, its URLs on this process's practice sites.
    fn task_from_row(&self, (spec, bases): SpecRow) -> Result<Task, StoreError> {
        task_from_spec(self.local_sites.localize(spec, bases.as_ref()))
    }
}

fn task_from_spec(spec: serde_json::Value) -> Result<Task, StoreError> {
    let spec = TaskSpec::from_json(spec).map_err(|e| StoreError::Corrupt(format!("{e:?}")))?;
    Task::try_from(spec).map_err(|e| StoreError::Corrupt(format!("{e:?}")))
}
