//! MiniWoB++, started on its page before the agent's first step as BrowserGym starts it: a
//! seeded `core.startEpisodeReal()`, its utterance as the instruction, `WOB_DONE_GLOBAL` as
//! the end of the episode, its reward read by the rubric.

use std::time::{Duration, Instant};

use browser_pool::Session;
use serde_json::Value;

use super::EnvError;

/// The episode's instruction as MiniWoB++ states it; some tasks answer an object with the
/// utterance and its fields.
const UTTERANCE: &str = "(() => { const u = core.getUtterance(); \
    return typeof u === 'string' ? u : (u && u.utterance) || JSON.stringify(u); })()";

const TASK_READY: &str = "typeof WOB_TASK_READY !== 'undefined' && WOB_TASK_READY === true";

/// Starts a MiniWoB++ episode with `seed` and returns its utterance.
pub async fn miniwob_start(session: &Session, seed: u64) -> Result<String, EnvError> {
    // Seeds above 2^53 would not survive JavaScript's numbers.
    let seed = seed % (1 << 53);
    let deadline = Instant::now() + Duration::from_secs(10);
    // One round trip in the usual case: start, wait in the page for the task to be ready
    // (briefly: a page call must stay well under the pool's script limit), read the
    // utterance. Each round trip right after the start costs 5-20 ms while the page redraws.
    // Settling gives up after its maximum wait; on a machine that busy the page may still be
    // loading, and starting then fails inside MiniWoB's code (its onload builds the canvas
    // the start draws on), so a page still loading is waited for first.
    let script = format!(
        "(async () => {{ if (document.readyState !== 'complete') return {{loading: true}}; \
         if (typeof core === 'undefined') return {{error: 'no MiniWoB++ core on this page'}}; \
         Math.seedrandom({seed}); core.EPISODE_MAX_TIME = 1e6; core.startEpisodeReal(); \
         for (let i = 0; !({TASK_READY}); i++) {{ \
           if (i >= 100) return {{pending: true}}; await new Promise(r => setTimeout(r, 10)); }} \
         return {{utterance: {UTTERANCE}}}; }})()"
    );
    let started = loop {
        let answer = session
            .evaluate(&script)
            .await?
            .map_err(|e| EnvError::Setup(format!("starting the MiniWoB++ episode failed: {e}")))?;
        if answer.get("loading").is_none() {
            break answer;
        }
        if Instant::now() > deadline {
            return Err(EnvError::Setup(
                "the MiniWoB++ page never finished loading".into(),
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    if let Some(e) = started.get("error") {
        return Err(EnvError::Setup(
            e.as_str().unwrap_or("unexpected answer").to_string(),
        ));
    }
    if let Some(u) = started.get("utterance") {
        return Ok(u.as_str().unwrap_or_default().to_string());
    }
    // Started, but the task is still getting ready (loading its assets).
    wait_until(
        session,
        TASK_READY,
        deadline,
        "the MiniWoB++ task never became ready",
    )
    .await?;
    let utterance = session
        .evaluate(UTTERANCE)
        .await?
        .map_err(|e| EnvError::Setup(format!("reading the utterance failed: {e}")))?;
    Ok(utterance.as_str().unwrap_or_default().to_string())
}

/// Polls `expression` until it is true; past `deadline`, a setup failure saying `what`.
async fn wait_until(
    session: &Session,
    expression: &str,
    deadline: Instant,
    what: &str,
) -> Result<(), EnvError> {
    loop {
        if session.evaluate(expression).await? == Ok(Value::Bool(true)) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(EnvError::Setup(what.into()));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether the MiniWoB++ episode on the page has ended.
pub async fn miniwob_done(session: &Session) -> Result<bool, EnvError> {
    Ok(session
        .evaluate("typeof WOB_DONE_GLOBAL !== 'undefined' && WOB_DONE_GLOBAL === true")
        .await?
        == Ok(Value::Bool(true)))
}
