//! Where the session's own snippets run in the top document: our isolated world there
//! ([`js::WORLD`]), not the page's main world.
//!
//! A page's scripts share its main world with anything evaluated there. Old libraries
//! (Prototype's `Array.from`), polyfills and anti-bot scripts replace built-ins, and a
//! page could read or disturb the elements a scan keeps; in the main world either broke
//! every observation of such a page. The isolated world sees the same DOM through its own
//! built-ins and globals. The tab asks for it (`Page.createIsolatedWorld`) as each
//! document commits and learns its unique id from the context event, so snippets go
//! straight to it; a snippet that finds none known, or a stale one, makes it itself.

use chromiumoxide::cdp::browser_protocol::page::{CreateIsolatedWorldParams, FrameId};
use chromiumoxide::cdp::js_protocol::runtime::{
    EvaluateParams, EvaluateReturns, ExecutionContextId,
};
use serde_json::Value;
use std::time::{Duration, Instant};

use super::Session;
use super::cdp::{by_value, navigating, value_of};
use crate::error::PoolError;
use crate::js;

/// Our world in the top document, as an evaluation names it.
pub(super) enum World {
    /// Known from its creation event, by unique id (see
    /// [`Tab::world`](super::tab::Tab::world)).
    Known(String),
    /// Just made (or found) by `Page.createIsolatedWorld`, which answers with a numeric
    /// id: good for the calls that follow at once, never kept.
    Made(ExecutionContextId),
}

impl World {
    pub(super) fn apply(&self, params: &mut EvaluateParams) {
        match self {
            World::Known(unique) => params.unique_context_id = Some(unique.clone()),
            World::Made(id) => params.context_id = Some(*id),
        }
    }
}

impl Session {
    /// Our world in the top document: the one the tab knows unless `fresh`, else made (or
    /// found) now. `None` when the page has no document to make it in at the moment.
    pub(super) async fn top_world(&self, fresh: bool) -> Result<Option<World>, PoolError> {
        if !fresh && let Some(unique) = self.tab().world() {
            return Ok(Some(World::Known(unique)));
        }
        // The main frame has its target's id.
        let frame = FrameId::new(self.tab().target.inner().clone());
        let mut params = CreateIsolatedWorldParams::new(frame);
        params.world_name = Some(js::WORLD.into());
        match self.call("Page.createIsolatedWorld", params).await {
            Ok(made) => Ok(Some(World::Made(made.execution_context_id))),
            Err(PoolError::Cdp { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Evaluates one of our own snippets in the top document's isolated world, retrying
    /// (within `settle_max`) while a navigation replaces the document.
    pub(super) async fn eval_ours(
        &self,
        expression: &str,
    ) -> Result<Result<Value, String>, PoolError> {
        let deadline = Instant::now() + self.cfg.settle_max;
        let mut fresh = false;
        loop {
            let transient = match self.top_world(fresh).await? {
                None => "the page has no document yet".to_string(),
                Some(world) => {
                    let mut params = by_value(expression, None);
                    world.apply(&mut params);
                    match self.call("Runtime.evaluate", params).await.map(value_of) {
                        Ok(Ok(v)) => return Ok(Ok(v)),
                        // A real exception (an invalid selector, say) will not go away by
                        // waiting.
                        Ok(Err(js)) if !navigating(&js) => return Ok(Err(js)),
                        Ok(Err(js)) => js,
                        // The known world's document is gone: make the new one's.
                        Err(PoolError::Cdp { message, .. }) => message,
                        Err(e) => return Err(e),
                    }
                }
            };
            if Instant::now() >= deadline {
                return Ok(Err(transient));
            }
            if fresh {
                tokio::time::sleep(Duration::from_millis(30)).await;
            }
            fresh = true;
        }
    }

    /// Runs `params`, an evaluation that keeps its result as a remote object, in a
    /// frame's world (`context`) or else in ours of the top document (the known one, else
    /// one made now, as a snippet's first evaluation in a new document does). `None` when
    /// the world or its document is gone.
    pub(super) async fn eval_object(
        &self,
        mut params: EvaluateParams,
        context: Option<ExecutionContextId>,
    ) -> Result<Option<EvaluateReturns>, PoolError> {
        if context.is_some() {
            params.context_id = context;
            return self.object_of(params).await;
        }
        for fresh in [false, true] {
            let Some(world) = self.top_world(fresh).await? else {
                return Ok(None);
            };
            let mut params = params.clone();
            world.apply(&mut params);
            if let Some(ret) = self.object_of(params).await? {
                return Ok(Some(ret));
            }
        }
        Ok(None)
    }

    /// An evaluation's answer; `None` when its world is gone.
    async fn object_of(
        &self,
        params: EvaluateParams,
    ) -> Result<Option<EvaluateReturns>, PoolError> {
        match self.call("Runtime.evaluate", params).await {
            Ok(ret) => Ok(Some(ret)),
            Err(PoolError::Cdp { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}
