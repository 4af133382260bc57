//! Environments a task may start on its page before the agent's first step. MiniWoB++ is
//! started as BrowserGym starts it: a seeded `core.startEpisodeReal()`, its utterance as the
//! instruction, `WOB_DONE_GLOBAL` as the end of the episode, its reward read by the rubric.

use std::time::{Duration, Instant};

use browser_pool::Session;
use serde_json::Value;

use crate::runner::InfraError;

/// Starts a MiniWoB++ episode with `seed` and returns its utterance.
pub async fn miniwob_start(session: &Session, seed: u64) -> Result<String, InfraError> {
    // Seeds above 2^53 would not survive JavaScript's numbers.
    let seed = seed % (1 << 53);
    let deadline = Instant::now() + Duration::from_secs(10);
    // Settling gives up after its maximum wait; on a machine that busy the page may still be
    // loading, and starting then fails inside MiniWoB's code (its canvas is not there yet).
    wait_until(
        session,
        "document.readyState === 'complete'",
        deadline,
        "the MiniWoB++ page never finished loading",
    )
    .await?;
    let start = format!(
        "(() => {{ if (typeof core === 'undefined') return 'no MiniWoB++ core on this page'; \
         Math.seedrandom({seed}); core.EPISODE_MAX_TIME = 1e6; core.startEpisodeReal(); return null; }})()"
    );
    match session.evaluate(&start).await? {
        Ok(Value::Null) => {}
        Ok(v) => {
            return Err(InfraError::Setup(
                v.as_str().unwrap_or("unexpected answer").to_string(),
            ));
        }
        Err(e) => {
            return Err(InfraError::Setup(format!(
                "starting the MiniWoB++ episode failed: {e}"
            )));
        }
    }
    wait_until(
        session,
        "typeof WOB_TASK_READY !== 'undefined' && WOB_TASK_READY === true",
        deadline,
        "the MiniWoB++ task never became ready",
    )
    .await?;
    // Some tasks answer an object with the utterance and its fields.
    let utterance = session
        .evaluate("(() => { const u = core.getUtterance(); return typeof u === 'string' ? u : (u && u.utterance) || JSON.stringify(u); })()")
        .await?
        .map_err(|e| InfraError::Setup(format!("reading the utterance failed: {e}")))?;
    Ok(utterance.as_str().unwrap_or_default().to_string())
}

/// Polls `expression` until it is true; past `deadline`, a setup failure saying `what`.
async fn wait_until(
    session: &Session,
    expression: &str,
    deadline: Instant,
    what: &str,
) -> Result<(), InfraError> {
    loop {
        if session.evaluate(expression).await? == Ok(Value::Bool(true)) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(InfraError::Setup(what.into()));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether the MiniWoB++ episode on the page has ended.
pub async fn miniwob_done(session: &Session) -> Result<bool, InfraError> {
    Ok(session
        .evaluate("typeof WOB_DONE_GLOBAL !== 'undefined' && WOB_DONE_GLOBAL === true")
        .await?
        == Ok(Value::Bool(true)))
}
