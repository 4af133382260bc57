//! Recordings of web state: a recording campaign's exchanges (written with each episode,
//! in its transaction) or an imported HAR file's; bodies in the content-addressed blobs.
//! Read back whole for a replay or a HAR export.

use sqlx::QueryBuilder;
use uuid::Uuid;

use super::{Blob, Store, StoreError, blob_hash};

/// One recorded exchange, its body included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExchangeRecord {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The URL asked for.
    pub url: String,
    /// The request's body.
    pub request_body: Option<String>,
    /// The response's status.
    pub status: u16,
    /// Its reason phrase.
    pub status_text: String,
    /// Its headers.
    pub headers: Vec<(String, String)>,
    /// Its body.
    pub body: Vec<u8>,
}

/// A recording as listed.
#[derive(Debug, Clone, serde::Serialize, sqlx::FromRow)]
pub struct RecordingView {
    /// Its id (a recording campaign's own).
    pub id: Uuid,
    /// Its name.
    pub name: String,
    /// The campaign that recorded it; `None` for an imported HAR.
    pub campaign_id: Option<Uuid>,
    /// Exchanges in it.
    pub exchanges: i64,
}

/// The blob of an exchange's body (MIME from its `Content-Type`).
fn body_blob(e: &ExchangeRecord) -> Blob {
    let mime = e
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        .map_or("application/octet-stream", |(_, v)| v.as_str());
    Blob {
        hash: blob_hash(&e.body),
        mime: mime.chars().take(200).collect(),
        bytes: e.body.clone(),
    }
}

/// Inserts `exchanges` (and their bodies) of `recording`, made by `episode`.
pub(crate) async fn insert(
    tx: &mut sqlx::PgConnection,
    recording: Uuid,
    episode: Option<Uuid>,
    exchanges: &[ExchangeRecord],
) -> Result<(), StoreError> {
    for chunk in exchanges.chunks(32) {
        let blobs: Vec<Blob> = chunk.iter().map(body_blob).collect();
        let mut q = QueryBuilder::new("INSERT INTO blobs (hash, mime, bytes) ");
        q.push_values(&blobs, |mut b, blob| {
            b.push_bind(&blob.hash)
                .push_bind(&blob.mime)
                .push_bind(&blob.bytes);
        });
        q.push(" ON CONFLICT (hash) DO NOTHING");
        q.build().execute(&mut *tx).await?;
        let mut q = QueryBuilder::new(
            "INSERT INTO exchanges (recording_id, episode_id, method, url, request_body, status,
                status_text, headers, body_hash) ",
        );
        q.push_values(chunk.iter().zip(&blobs), |mut b, (e, blob)| {
            let headers: Vec<[&str; 2]> = e
                .headers
                .iter()
                .map(|(k, v)| [k.as_str(), v.as_str()])
                .collect();
            b.push_bind(recording)
                .push_bind(episode)
                .push_bind(&e.method)
                .push_bind(&e.url)
                .push_bind(&e.request_body)
                .push_bind(i32::from(e.status))
                .push_bind(&e.status_text)
                .push_bind(sqlx::types::Json(headers))
                .push_bind(&blob.hash);
        });
        q.build().execute(&mut *tx).await?;
    }
    Ok(())
}

type Row = (
    String,
    String,
    Option<String>,
    i32,
    String,
    sqlx::types::Json<Vec<[String; 2]>>,
    Vec<u8>,
);

fn from_row(
    (method, url, request_body, status, status_text, headers, body): Row,
) -> ExchangeRecord {
    ExchangeRecord {
        method,
        url,
        request_body,
        status: u16::try_from(status).unwrap_or(0),
        status_text,
        headers: headers.0.into_iter().map(|[k, v]| (k, v)).collect(),
        body,
    }
}

const COLUMNS: &str =
    "SELECT x.method, x.url, x.request_body, x.status, x.status_text, x.headers, b.bytes
     FROM exchanges x JOIN blobs b ON b.hash = x.body_hash";

impl Store {
    /// Creates an empty recording (a recording campaign's, with its id).
    pub async fn create_recording(
        &self,
        id: Uuid,
        name: &str,
        campaign: Option<Uuid>,
    ) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO recordings (id, name, campaign_id) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING")
            .bind(id)
            .bind(name)
            .bind(campaign)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Stores an imported recording (a HAR file's exchanges) in one transaction.
    pub async fn import_recording(
        &self,
        id: Uuid,
        name: &str,
        exchanges: &[ExchangeRecord],
    ) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("INSERT INTO recordings (id, name) VALUES ($1, $2)")
            .bind(id)
            .bind(name)
            .execute(&mut *tx)
            .await?;
        insert(&mut tx, id, None, exchanges).await?;
        tx.commit().await?;
        Ok(())
    }

    /// A recording, if it exists.
    pub async fn get_recording(&self, id: Uuid) -> Result<Option<RecordingView>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT r.id, r.name, r.campaign_id,
                (SELECT count(*) FROM exchanges x WHERE x.recording_id = r.id) AS exchanges
             FROM recordings r WHERE r.id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Every recording, newest first.
    pub async fn list_recordings(&self) -> Result<Vec<RecordingView>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT r.id, r.name, r.campaign_id,
                (SELECT count(*) FROM exchanges x WHERE x.recording_id = r.id) AS exchanges
             FROM recordings r ORDER BY r.created_at DESC",
        )
        .fetch_all(&self.pool)
        .await?)
    }

    /// The exchanges to replay an episode of `task`'s `rollout` from: those its
    /// counterpart in the recording campaign made when there is one, else the whole
    /// recording's, in recorded order.
    pub async fn replay_exchanges(
        &self,
        recording: Uuid,
        task: &str,
        rollout: i32,
    ) -> Result<Vec<ExchangeRecord>, StoreError> {
        let own: Vec<Row> = sqlx::query_as(&format!(
            "{COLUMNS} JOIN episodes e ON e.id = x.episode_id
             WHERE x.recording_id = $1 AND e.task_id = $2 AND e.rollout = $3 ORDER BY x.id"
        ))
        .bind(recording)
        .bind(task)
        .bind(rollout)
        .fetch_all(&self.pool)
        .await?;
        if !own.is_empty() {
            return Ok(own.into_iter().map(from_row).collect());
        }
        self.recording_exchanges(recording, None).await
    }

    /// A recording's exchanges (or one episode's of them), in recorded order.
    pub async fn recording_exchanges(
        &self,
        recording: Uuid,
        episode: Option<Uuid>,
    ) -> Result<Vec<ExchangeRecord>, StoreError> {
        let mut q = QueryBuilder::new(COLUMNS);
        q.push(" WHERE x.recording_id = ").push_bind(recording);
        if let Some(e) = episode {
            q.push(" AND x.episode_id = ").push_bind(e);
        }
        q.push(" ORDER BY x.id");
        let rows: Vec<Row> = q.build_query_as().fetch_all(&self.pool).await?;
        Ok(rows.into_iter().map(from_row).collect())
    }
}
