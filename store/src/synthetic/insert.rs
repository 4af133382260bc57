//! Writing a synthetic history: tasks and campaigns row by row (few), screenshots as a
//! small pool of tiny images, and episodes, steps and verdicts as column arrays through
//! `unnest`, one transaction per batch (a few binds per statement whatever its rows).

use std::io::Cursor;

use sqlx::{PgPool, Postgres, Transaction};

use super::plan::Plan;
use super::rows::Batch;
use crate::state::EpisodeStatus;
use crate::{StoreError, blob_hash};

/// Registers the plan's tasks (kept if already there: a second set reuses them).
pub(super) async fn tasks(pool: &PgPool, plan: &Plan) -> Result<(), StoreError> {
    let mut tx = pool.begin().await?;
    for t in &plan.tasks {
        sqlx::query(
            "INSERT INTO tasks (id, site, instruction, start_url, difficulty, split, tags, spec)
             VALUES ($1, $2, $3->>'instruction', $3->>'start_url', $4, $5,
                ARRAY(SELECT jsonb_array_elements_text($3->'tags')), $3)
             ON CONFLICT (id) DO NOTHING",
        )
        .bind(&t.id)
        .bind(t.site)
        .bind(&t.spec)
        .bind(t.difficulty)
        .bind(t.split)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Inserts the plan's campaigns.
pub(super) async fn campaigns(pool: &PgPool, plan: &Plan) -> Result<(), StoreError> {
    let mut tx = pool.begin().await?;
    for c in &plan.campaigns {
        sqlx::query(
            "INSERT INTO campaigns (id, name, status, policy, config, total_episodes, error,
                created_at, started_at, finished_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(c.id)
        .bind(&c.name)
        .bind(c.status)
        .bind(c.policy)
        .bind(&c.config)
        .bind(i32::try_from(c.episodes.len()).unwrap_or(i32::MAX))
        .bind(&c.error)
        .bind(c.created_at)
        .bind(c.started_at)
        .bind(c.finished_at)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// `count` tiny PNG screenshots (distinct colours), stored once; returns their hashes.
pub(super) async fn blobs(pool: &PgPool, count: usize) -> Result<Vec<String>, StoreError> {
    let mut hashes = Vec::with_capacity(count);
    let mut tx = pool.begin().await?;
    for i in 0..count {
        let shade = [
            (i * 37 % 256) as u8,
            (i * 91 % 256) as u8,
            (i * 53 % 256) as u8,
        ];
        let img = image::RgbImage::from_pixel(64, 36, image::Rgb(shade));
        let mut bytes = Vec::new();
        img.write_to(&mut Cursor::new(&mut bytes), image::ImageFormat::Png)
            .map_err(|e| StoreError::Corrupt(format!("encoding a synthetic screenshot: {e}")))?;
        let hash = blob_hash(&bytes);
        sqlx::query(
            "INSERT INTO blobs (hash, mime, bytes) VALUES ($1, 'image/png', $2)
             ON CONFLICT (hash) DO NOTHING",
        )
        .bind(&hash)
        .bind(bytes)
        .execute(&mut *tx)
        .await?;
        hashes.push(hash);
    }
    tx.commit().await?;
    Ok(hashes)
}

async fn episodes(tx: &mut Transaction<'_, Postgres>, b: &Batch) -> Result<(), StoreError> {
    let e = &b.episodes;
    sqlx::query(
        "INSERT INTO episodes (id, campaign_id, task_id, rollout, seed, status, end_reason, success,
            score, final_answer, final_url, final_screenshot, steps, attempts, last_error,
            started_at, finished_at, duration_ms, judge_error, policy, visited_urls, finished_by)
         SELECT id, campaign_id, task_id, rollout, seed, status, end_reason, success,
            score, final_answer, final_url, final_screenshot, steps, attempts, last_error,
            started_at, finished_at, duration_ms, judge_error, policy::jsonb, visited::text[],
            CASE WHEN status = $22 THEN 'synthetic' END
         FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::int[], $5::int8[], $6::text[],
            $7::text[], $8::bool[], $9::float8[], $10::text[], $11::text[], $12::text[],
            $13::int[], $14::int[], $15::text[], $16::timestamptz[], $17::timestamptz[],
            $18::int[], $19::text[], $20::text[], $21::text[])
         AS u(id, campaign_id, task_id, rollout, seed, status, end_reason, success,
            score, final_answer, final_url, final_screenshot, steps, attempts, last_error,
            started_at, finished_at, duration_ms, judge_error, policy, visited)",
    )
    .bind(&e.id)
    .bind(&e.campaign_id)
    .bind(&e.task_id)
    .bind(&e.rollout)
    .bind(&e.seed)
    .bind(&e.status)
    .bind(&e.end_reason)
    .bind(&e.success)
    .bind(&e.score)
    .bind(&e.final_answer)
    .bind(&e.final_url)
    .bind(&e.final_screenshot)
    .bind(&e.steps)
    .bind(&e.attempts)
    .bind(&e.last_error)
    .bind(&e.started_at)
    .bind(&e.finished_at)
    .bind(&e.duration_ms)
    .bind(&e.judge_error)
    .bind(&e.policy)
    .bind(&e.visited)
    .bind(EpisodeStatus::Finished)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

async fn steps(tx: &mut Transaction<'_, Postgres>, b: &Batch) -> Result<(), StoreError> {
    let s = &b.steps;
    if s.idx.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "INSERT INTO steps (episode_id, idx, url, title, screenshot, elements, events, tabs,
            action, thought, raw_output, action_error, click_x, click_y, logprob,
            token_logprobs, prompt, observe_ms, policy_ms, act_ms)
         SELECT episode_id, idx, url, title, screenshot, elements::jsonb, events::jsonb,
            tabs::jsonb, action, thought, raw_output, action_error, click_x, click_y, logprob,
            token_logprobs::real[], prompt, observe_ms, policy_ms, act_ms
         FROM unnest($1::uuid[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[],
            $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[],
            $13::real[], $14::real[], $15::float8[], $16::text[], $17::text[], $18::int[],
            $19::int[], $20::int[])
         AS u(episode_id, idx, url, title, screenshot, elements, events, tabs,
            action, thought, raw_output, action_error, click_x, click_y, logprob,
            token_logprobs, prompt, observe_ms, policy_ms, act_ms)",
    )
    .bind(&s.episode_id)
    .bind(&s.idx)
    .bind(&s.url)
    .bind(&s.title)
    .bind(&s.screenshot)
    .bind(&s.elements)
    .bind(&s.events)
    .bind(&s.tabs)
    .bind(&s.action)
    .bind(&s.thought)
    .bind(&s.raw_output)
    .bind(&s.action_error)
    .bind(&s.click_x)
    .bind(&s.click_y)
    .bind(&s.logprob)
    .bind(&s.token_logprobs)
    .bind(&s.prompt)
    .bind(&s.observe_ms)
    .bind(&s.policy_ms)
    .bind(&s.act_ms)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

async fn verdicts(tx: &mut Transaction<'_, Postgres>, b: &Batch) -> Result<(), StoreError> {
    let v = &b.verdicts;
    if v.ord.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "INSERT INTO verdicts (episode_id, judge, group_id, fact_id, ord, passed, evidence, reason)
         SELECT episode_id, 'rule', 'g0', fact_id, ord, passed, evidence, reason
         FROM unnest($1::uuid[], $2::text[], $3::int[], $4::bool[], $5::text[], $6::text[])
         AS u(episode_id, fact_id, ord, passed, evidence, reason)",
    )
    .bind(&v.episode_id)
    .bind(&v.fact_id)
    .bind(&v.ord)
    .bind(&v.passed)
    .bind(&v.evidence)
    .bind(&v.reason)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Writes one batch in one transaction. Synthetic rows are not worth a disk flush per
/// commit: losing the last batches to a crash loses nothing real.
pub(super) async fn batch(pool: &PgPool, b: &Batch) -> Result<(), StoreError> {
    let mut tx = pool.begin().await?;
    sqlx::query("SET LOCAL synchronous_commit = off")
        .execute(&mut *tx)
        .await?;
    episodes(&mut tx, b).await?;
    steps(&mut tx, b).await?;
    verdicts(&mut tx, b).await?;
    tx.commit().await?;
    Ok(())
}
