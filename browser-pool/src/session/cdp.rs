//! Page-level CDP calls, each bounded by a timeout, and what is done when one hangs: a
//! navigation that holds the page's calls is outlasted (or stopped), a runaway script is
//! terminated, and a page that still does not answer is reported unresponsive. Also the
//! evaluations every other part of the session builds on.

use std::time::{Duration, Instant};

use chromiumoxide::cdp::browser_protocol::page::StopLoadingParams;
use chromiumoxide::cdp::js_protocol::runtime::{
    EvaluateParams, ExecutionContextId, TerminateExecutionParams,
};
use chromiumoxide::error::CdpError;
use chromiumoxide::types::{Command, CommandResponse};
use serde_json::Value;

use super::Session;
use super::tab::Life;
use crate::error::PoolError;
use crate::events::PageEvent;

/// What [`Session::outlast_navigation`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outlasted {
    /// No navigation in progress (or it could not be stopped): the call hung for another
    /// reason.
    Nothing,
    /// The navigation committed or ended without a document.
    Ended,
    /// It got no answer in time and was stopped.
    Stopped,
}

impl Outlasted {
    /// Whether a navigation held the call and is over now, so the call can be sent again.
    fn ended(self) -> bool {
        self != Outlasted::Nothing
    }
}

/// What [`Session::stop_scripts`] found.
pub(super) enum Rescue {
    /// The page answered (at once, or late on a starved machine): the call was slow, not
    /// the page stuck.
    Responsive,
    /// A runaway script was terminated.
    Stopped,
    /// The page did not answer even that.
    Failed,
}

/// An evaluation that awaits promises and returns the value itself, in `context` (an
/// isolated world) or else the page's main world.
pub(super) fn by_value(expression: &str, context: Option<ExecutionContextId>) -> EvaluateParams {
    let mut params = EvaluateParams::new(expression);
    params.context_id = context;
    params.return_by_value = Some(true);
    params.await_promise = Some(true);
    params
}

/// An evaluation's value, or the page's exception as text.
pub(super) fn value_of(
    ret: chromiumoxide::cdp::js_protocol::runtime::EvaluateReturns,
) -> Result<Value, String> {
    match ret.exception_details {
        Some(ex) => Err(ex.exception.and_then(|e| e.description).unwrap_or(ex.text)),
        None => Ok(ret.result.value.unwrap_or(Value::Null)),
    }
}

impl Session {
    /// The limit for one page-level call: past it the page's scripts are stopped.
    pub(super) fn page_limit(&self) -> Duration {
        self.cfg.script_timeout.min(self.cfg.cdp_timeout)
    }

    pub(super) async fn call<C: Command + Clone>(
        &self,
        op: &'static str,
        cmd: C,
    ) -> Result<C::Response, PoolError> {
        self.call_within(op, cmd, self.page_limit()).await
    }

    /// A read of the page as the browser shows it (screenshot, accessibility tree). While a
    /// navigation swaps the page's renderer (a cross-site hop, a redirect the page started
    /// after settling) Chromium has no page to read for a moment, or no frame to capture
    /// until the new renderer paints, and a read sent to the old renderer may never be
    /// answered; the read is tried again until the new page is there, within
    /// `settle_max`, instead of failing the episode.
    pub(super) async fn read_page<C: Command + Clone>(
        &self,
        op: &'static str,
        cmd: C,
    ) -> Result<C::Response, PoolError> {
        let deadline = Instant::now() + self.cfg.settle_max;
        loop {
            let late = Instant::now() >= deadline;
            let tab = self.tab();
            let seen = tab.documents();
            let swapped = async {
                if late {
                    return futures::future::pending().await;
                }
                tab.document_after(seen).await;
                tokio::time::sleep(SWAPPED_READ_GRACE).await;
            };
            let outcome = tokio::select! {
                r = self.call(op, cmd.clone()) => r,
                () = swapped => continue,
            };
            match outcome {
                Err(PoolError::Cdp { message, .. }) if between_renderers(&message) && !late => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                other => return other,
            }
        }
    }

    /// One page-level CDP call. When it hangs, the page's running script is terminated and
    /// the call tried once more; a page that still does not answer is reported unresponsive.
    /// For calls that must not run twice (input events) use [`Session::input`].
    pub(super) async fn call_within<C: Command + Clone>(
        &self,
        op: &'static str,
        cmd: C,
        limit: Duration,
    ) -> Result<C::Response, PoolError> {
        let mut outcome = self.call_once(op, cmd.clone(), limit).await;
        if matches!(outcome, Err(PoolError::Timeout { .. }))
            && self.outlast_navigation().await.ended()
        {
            outcome = self.call_once(op, cmd.clone(), limit).await;
        }
        match outcome {
            Err(PoolError::Timeout { after, .. }) => match self.stop_scripts(op).await {
                Rescue::Stopped | Rescue::Responsive => {
                    match self.call_once(op, cmd, limit).await {
                        Err(PoolError::Timeout { after, .. }) => {
                            Err(PoolError::PageUnresponsive { op, after })
                        }
                        other => other,
                    }
                }
                Rescue::Failed if self.browser.is_alive() => {
                    Err(PoolError::PageUnresponsive { op, after })
                }
                Rescue::Failed => Err(PoolError::BrowserGone {
                    op,
                    message: "browser process exited".into(),
                }),
            },
            other => other,
        }
    }

    /// An input event: when the page's handler hangs on it, the script is stopped and the
    /// event counts as delivered (sending it again would click twice).
    pub(super) async fn input<C: Command + Clone>(
        &self,
        op: &'static str,
        cmd: C,
    ) -> Result<(), PoolError> {
        let limit = self.page_limit();
        match self.call_once(op, cmd, limit).await {
            Ok(_) => Ok(()),
            // Held for a navigation, then delivered to one page or the other.
            Err(PoolError::Timeout { .. }) if self.outlast_navigation().await.ended() => Ok(()),
            Err(PoolError::Timeout { after, .. }) => match self.stop_scripts(op).await {
                Rescue::Stopped | Rescue::Responsive => Ok(()),
                Rescue::Failed => Err(PoolError::PageUnresponsive { op, after }),
            },
            // Delivered, and the page closed its tab in answer (see `inputs`).
            Err(_) if self.tab().life() == Life::Closed => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Input events sent back to back without waiting for each acknowledgement (Chromium
    /// queues and delivers them in order), saving a round trip per event. Timeouts are
    /// handled once for the group, as [`Session::input`] does for one event.
    pub(super) async fn inputs<C: Command + Clone>(
        &self,
        op: &'static str,
        cmds: Vec<C>,
    ) -> Result<(), PoolError> {
        let limit = self.page_limit();
        let results =
            futures::future::join_all(cmds.into_iter().map(|c| self.call_once(op, c, limit))).await;
        let mut timed_out = None;
        for r in results {
            match r {
                Ok(_) => {}
                Err(PoolError::Timeout { after, .. }) => timed_out = Some(after),
                // The page closed its own tab in answer to the event (a "close" button):
                // the input was delivered; settling moves on to the tab left active.
                Err(_) if self.tab().life() == Life::Closed => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        match timed_out {
            None => Ok(()),
            Some(_) if self.outlast_navigation().await.ended() => Ok(()),
            Some(after) => match self.stop_scripts(op).await {
                Rescue::Stopped | Rescue::Responsive => Ok(()),
                Rescue::Failed => Err(PoolError::PageUnresponsive { op, after }),
            },
        }
    }

    async fn call_once<C: Command>(
        &self,
        op: &'static str,
        cmd: C,
        limit: Duration,
    ) -> Result<C::Response, PoolError> {
        self.answer_of(op, self.page.execute(cmd), limit).await
    }

    /// A call's answer within `limit`, or the infrastructure error that kept it away.
    pub(super) async fn answer_of<R: std::fmt::Debug>(
        &self,
        op: &'static str,
        answer: impl Future<Output = Result<CommandResponse<R>, CdpError>>,
        limit: Duration,
    ) -> Result<R, PoolError> {
        let tab = self.tab();
        let ended = |life| match life {
            Life::Crashed => PoolError::TargetCrashed { op },
            // Recoverable: settling and observing move on to another tab.
            Life::Closed | Life::Live => PoolError::Cdp {
                op,
                message: "the tab was closed".into(),
            },
        };
        if tab.life() != Life::Live {
            return Err(ended(tab.life()));
        }
        let call = tokio::time::timeout(limit, answer);
        let outcome = tokio::select! {
            r = call => r,
            life = tab.ended() => return Err(ended(life)),
        };
        match outcome {
            Err(_) => {
                // A hung call usually means a hung renderer or a dead browser.
                if !self.browser.is_alive() {
                    return Err(PoolError::BrowserGone {
                        op,
                        message: "browser process exited".into(),
                    });
                }
                Err(PoolError::Timeout { op, after: limit })
            }
            Ok(Err(e)) => Err(PoolError::from_cdp(op, e)),
            Ok(Ok(resp)) => Ok(resp.result),
        }
    }

    /// After a call timed out: Chromium holds the calls to a page whose main frame is
    /// between documents (a navigation the page started, such as a form submission, whose
    /// server has not answered yet) until the next document commits. Waits for that until
    /// the navigation has taken `navigation_timeout`, else stops it (reported in the next
    /// observation), after which the page it was leaving answers again. Checked before
    /// stopping scripts: a termination held back like the call would reach the new
    /// document and kill its scripts.
    pub(super) async fn outlast_navigation(&self) -> Outlasted {
        let tab = self.tab();
        let Some(navigating) = tab.navigating() else {
            return Outlasted::Nothing;
        };
        let deadline = navigating.since + self.cfg.navigation_timeout;
        if tokio::time::timeout_at(deadline.into(), tab.navigation_over())
            .await
            .is_ok()
        {
            return Outlasted::Ended;
        }
        let stop = self.page.execute(StopLoadingParams::default());
        if !matches!(
            tokio::time::timeout(self.cfg.cdp_timeout, stop).await,
            Ok(Ok(_))
        ) {
            return Outlasted::Nothing;
        }
        tracing::debug!(
            url = navigating.url,
            "stopped a navigation that got no answer"
        );
        // Its request fails as cancelled, which ends it here too.
        let _ = tokio::time::timeout(Duration::from_millis(500), tab.navigation_over()).await;
        self.events.push(PageEvent::NavigationStopped {
            url: navigating.url,
            after_ms: navigating.since.elapsed().as_millis() as u64,
        });
        Outlasted::Stopped
    }

    /// After a call timed out: when the page's main thread is busy (an infinite loop, an
    /// alert storm), terminates the running script; `Runtime.terminateExecution`
    /// interrupts even a busy main thread.
    pub(super) async fn stop_scripts(&self, during: &'static str) -> Rescue {
        if !self.browser.is_alive() || self.tab().life() != Life::Live {
            return Rescue::Failed;
        }
        let ping = self.page.execute(EvaluateParams::new("1"));
        if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_millis(300), ping).await {
            return Rescue::Responsive;
        }
        let stop = self.page.execute(TerminateExecutionParams::default());
        match tokio::time::timeout(Duration::from_secs(2), stop).await {
            Ok(Ok(_)) => {
                tracing::info!(during, "terminated a runaway page script");
                self.events.push(PageEvent::ScriptStopped {
                    during: during.to_string(),
                });
                Rescue::Stopped
            }
            // A renderer starved of CPU while it opens windows (the popup storm on a loaded
            // two-core machine) can miss both short limits without being hung: one ping
            // with the page's whole limit tells the two apart.
            _ => {
                let ping = self.page.execute(EvaluateParams::new("1"));
                match tokio::time::timeout(self.page_limit(), ping).await {
                    Ok(Ok(_)) => Rescue::Responsive,
                    _ => Rescue::Failed,
                }
            }
        }
    }

    /// Evaluates a JavaScript expression in the page (promises are awaited).
    ///
    /// The outer error is an infrastructure failure; the inner one a JavaScript exception.
    pub async fn evaluate(&self, expression: &str) -> Result<Result<Value, String>, PoolError> {
        self.eval_within(expression, self.page_limit()).await
    }

    /// Evaluates an expression whose script must finish within `limit` (a busy loop is
    /// terminated by the page's VM, not just abandoned).
    pub async fn evaluate_limited(
        &self,
        expression: &str,
        limit: Duration,
    ) -> Result<Result<Value, String>, PoolError> {
        let mut params = by_value(expression, None);
        params.timeout = Some(chromiumoxide::cdp::js_protocol::runtime::TimeDelta::new(
            limit.as_millis() as f64,
        ));
        let started = std::time::Instant::now();
        let timed_out = || {
            format!(
                "timed out after {}s (the script was stopped)",
                limit.as_secs_f64()
            )
        };
        let ret = match self
            .call_within("Runtime.evaluate", params, limit + self.cfg.cdp_timeout)
            .await
        {
            Ok(ret) => ret,
            // Chromium stops the script at `timeout` and answers with an internal error:
            // the page's script failed, not the browser.
            Err(PoolError::Cdp { .. }) if started.elapsed() >= limit => {
                return Ok(Err(timed_out()));
            }
            Err(e) => return Err(e),
        };
        if let Some(ex) = ret.exception_details {
            if started.elapsed() >= limit {
                return Ok(Err(timed_out()));
            }
            return Ok(Err(ex
                .exception
                .and_then(|e| e.description)
                .unwrap_or(ex.text)));
        }
        Ok(Ok(ret.result.value.unwrap_or(Value::Null)))
    }

    pub(super) async fn eval_within(
        &self,
        expression: &str,
        limit: Duration,
    ) -> Result<Result<Value, String>, PoolError> {
        let ret = self
            .call_within("Runtime.evaluate", by_value(expression, None), limit)
            .await?;
        Ok(value_of(ret))
    }

    /// Runs one of the marks settling reads in the page's main world. A document on its
    /// way out ("Inspected target navigated or closed") needs no mark: the next one is
    /// settled from its own load.
    pub(super) async fn mark(&self, expression: &str) -> Result<(), PoolError> {
        match self.evaluate(expression).await {
            Ok(_) | Err(PoolError::Cdp { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// How long a read may still take once a new document committed while it waited, before
/// it is sent again (a screenshot normally answers in tens of ms, a loaded 2-core machine
/// in a few hundred).
const SWAPPED_READ_GRACE: Duration = Duration::from_secs(1);

/// Chromium's answers to a page-level read while the page's frame is between renderers:
/// the old one detached, or the new one not painted yet.
fn between_renderers(message: &str) -> bool {
    message.contains("Not attached to an active page")
        || message.contains("Unable to capture screenshot")
}

/// Whether an evaluation failed because the document went away under it (a navigation),
/// rather than because the script threw.
pub(super) fn navigating(message: &str) -> bool {
    ["context", "navigated", "closed", "detached"]
        .iter()
        .any(|w| message.contains(w))
}
