//! Progress bars for running campaigns, fed from the database (the source of truth, also
//! when other worker processes share the campaign).

use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use store::{Status, Store};
use uuid::Uuid;

/// A bar of `len` in the CLI's one look: `prefix` in bold, right-aligned in `width`
/// columns, the bar, then `tail` (an indicatif template: `{pos}/{len} episodes {msg}`).
pub fn bar(
    len: u64,
    prefix: impl Into<std::borrow::Cow<'static, str>>,
    width: usize,
    tail: &str,
) -> anyhow::Result<ProgressBar> {
    let bar = ProgressBar::new(len);
    bar.set_style(style(width, tail)?);
    bar.set_prefix(prefix);
    Ok(bar)
}

/// The style [`bar`] gives.
fn style(width: usize, tail: &str) -> anyhow::Result<ProgressStyle> {
    Ok(ProgressStyle::with_template(&format!(
        "{{prefix:>{width}.bold}} [{{bar:32.cyan/blue}}] {tail}"
    ))?
    .progress_chars("=> "))
}

/// Ended, or paused: a campaign that no longer runs by itself.
fn stopped(s: Status) -> bool {
    s.is_ended() || s == Status::Paused
}

/// Shows one bar per campaign until every campaign has stopped running; returns their
/// final statuses.
pub async fn watch(store: &Store, campaigns: &[Uuid]) -> anyhow::Result<Vec<Status>> {
    let multi = MultiProgress::new();
    let style = style(18, "{pos:>4}/{len:4} {msg} {elapsed_precise} eta {eta}")?;
    let mut bars = Vec::new();
    for id in campaigns {
        let view = store
            .get_campaign(*id)
            .await?
            .ok_or_else(|| anyhow::anyhow!("campaign {id} vanished"))?;
        let bar = multi.add(ProgressBar::new(view.total_episodes.max(0) as u64));
        bar.set_style(style.clone());
        bar.set_prefix(view.name.clone());
        bars.push((bar, 0i64, Instant::now()));
    }
    loop {
        let mut statuses = Vec::new();
        for ((bar, first_steps, since), id) in bars.iter_mut().zip(campaigns) {
            let Some(v) = store.get_campaign(*id).await? else {
                continue;
            };
            if *first_steps == 0 && v.steps > 0 && bar.position() == 0 {
                *first_steps = v.steps;
                *since = Instant::now();
            }
            bar.set_position((v.counts.finished + v.counts.failed).max(0) as u64);
            let rate = match v.success_rate {
                Some(r) => format!("{:.0}%", r * 100.0),
                None => "-".into(),
            };
            let secs = since.elapsed().as_secs_f64().max(0.001);
            let steps_per_s = (v.steps - *first_steps).max(0) as f64 / secs;
            bar.set_message(format!(
                "✓{} ✗{} infra-failed {} | success {rate} | {steps_per_s:.1} steps/s | {}",
                v.successes,
                v.counts.finished - v.successes,
                v.counts.failed,
                v.status
            ));
            if stopped(v.status) && !bar.is_finished() {
                bar.finish();
            }
            statuses.push(v.status);
        }
        if statuses.len() == campaigns.len() && statuses.iter().all(|s| stopped(*s)) {
            return Ok(statuses);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
