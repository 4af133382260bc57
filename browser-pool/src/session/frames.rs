//! Cross-origin iframes: their elements in the observation, and actions on them.
//!
//! The top document's scan (`js/observe.js`) cannot read a cross-origin frame's document
//! and reports a hole where it sits. Here each hole's frame is found (`DOM.describeNode` of
//! the iframe element names its frame), an isolated world is made in it
//! (`Page.createIsolatedWorld`: the page's own scripts neither see nor disturb it) and the
//! same scan runs there, told where the frame sits in the top viewport; its elements are
//! spliced in at the hole, so element numbers stay one depth-first order over everything
//! shown. An action on such an element runs its snippet in that world with the element's
//! number there and adds where the frame sits at that moment. Frames are found only in the
//! page's own renderer: launched browsers run with `--disable-site-isolation-trials`, so
//! cross-site frames share it; on a remote browser with site isolation a cross-site frame
//! stays out of the list.

use std::collections::HashMap;

use chromiumoxide::cdp::browser_protocol::dom::DescribeNodeParams;
use chromiumoxide::cdp::browser_protocol::page::{CreateIsolatedWorldParams, FrameId};
use chromiumoxide::cdp::js_protocol::runtime::{
    EvaluateParams, ExecutionContextId, ReleaseObjectGroupParams,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Instant;

use super::Session;
use super::cdp::{by_value, value_of};
use super::numbering::{Frame, Numbering, kids_of, splice};
use super::settle::{PROBE_WAIT, Probe, SETTLE_POLL};
use crate::action::Target;
use crate::error::PoolError;
use crate::js;
use crate::observation::Element;

/// Cross-origin frames scanned per observation at most (ad-heavy pages nest dozens).
const MAX_FRAMES: usize = 16;
/// Cross-origin frames inside cross-origin frames are followed this deep.
const MAX_DEPTH: usize = 3;
/// Elements listed per observation at most, over all documents (as `observe.js`).
const MAX_ELEMENTS: usize = 400;
/// The object group of the iframe handles a scan takes.
const OBJECTS: &str = "surfgym-frames";

/// A rectangle in top-viewport coordinates.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(super) struct Rect {
    l: f64,
    t: f64,
    r: f64,
    b: f64,
}

/// A cross-origin iframe one scan could not enter.
#[derive(Debug, Deserialize)]
pub(super) struct Hole {
    /// How many of the document's elements come before it.
    at: usize,
    /// Its index under `Symbol.for('surfgym.frames')` in the scanned document.
    slot: usize,
    /// Its content box's corner in top-viewport coordinates.
    x: f64,
    y: f64,
    /// What of its viewport shows through everything around it.
    view: Rect,
}

/// What the scan of a cross-origin frame returns (the same script as the top's).
#[derive(Deserialize)]
struct FrameScan {
    elements: Vec<Element>,
    #[serde(default)]
    holes: Vec<Hole>,
}

/// Where an action's target is to be looked for.
pub(super) struct Located {
    /// The target as the document that holds it numbers it.
    pub(super) target: Target,
    /// The cross-origin frame holding it (an index into the numbering), if any.
    pub(super) frame: Option<usize>,
}

impl Session {
    /// Adds the elements of the cross-origin frames behind `holes` (the top document's
    /// scan's) to `top`, renumbered in one order; the numbering maps numbers back.
    ///
    /// Frames are scanned a level at a time, all of a level's at once (each costs four
    /// round trips: a page of ads holds a dozen frames), at most [`MAX_FRAMES`] in all.
    pub(super) async fn with_frames(
        &self,
        top: Vec<Element>,
        holes: Vec<Hole>,
    ) -> Result<(Vec<Element>, Numbering), PoolError> {
        if holes.is_empty() {
            return Ok((top, Numbering::default()));
        }
        let max = MAX_ELEMENTS.saturating_sub(top.len());
        let mut frames: Vec<Frame> = Vec::new();
        let mut found: Vec<(usize, Vec<Element>)> = Vec::new();
        let known: HashMap<FrameId, ExecutionContextId> = self
            .tab()
            .numbering
            .frames
            .iter()
            .map(|f| (f.id.clone(), f.context))
            .collect();
        let mut level: Vec<(Option<usize>, Hole)> = holes.into_iter().map(|h| (None, h)).collect();
        for _ in 0..MAX_DEPTH {
            level.truncate(MAX_FRAMES - frames.len());
            if level.is_empty() || max == 0 {
                break;
            }
            let scans = futures::future::join_all(level.iter().map(|(parent, hole)| {
                let context = parent.map(|p| frames[p].context);
                self.scan_frame(context, hole, max, &known)
            }))
            .await;
            let _ = self
                .call(
                    "Runtime.releaseObjectGroup",
                    ReleaseObjectGroupParams::new(OBJECTS),
                )
                .await;
            let mut next = Vec::new();
            for ((parent, hole), scan) in level.into_iter().zip(scans) {
                let Some((id, context, scan)) = scan? else {
                    continue;
                };
                let index = frames.len();
                frames.push(Frame {
                    id,
                    context,
                    parent,
                    slot: hole.slot,
                });
                found.push((hole.at, scan.elements));
                next.extend(scan.holes.into_iter().map(|h| (Some(index), h)));
            }
            level = next;
        }
        let mut docs: Vec<Option<(usize, Vec<Element>)>> = found.into_iter().map(Some).collect();
        let kids = kids_of(None, &frames, &mut docs);
        let (mut elements, mut numbering) = splice(top, kids, frames);
        elements.truncate(MAX_ELEMENTS);
        numbering.homes.truncate(MAX_ELEMENTS);
        Ok((elements, numbering))
    }

    /// Enters the frame behind one hole and scans it there; `None` when it cannot be
    /// entered (gone, navigating, in another renderer) or its scan fails. The world the
    /// last observation made in the same frame is used again while its document lives.
    async fn scan_frame(
        &self,
        parent: Option<ExecutionContextId>,
        hole: &Hole,
        max: usize,
        known: &HashMap<FrameId, ExecutionContextId>,
    ) -> Result<Option<(FrameId, ExecutionContextId, FrameScan)>, PoolError> {
        let Some(id) = self.frame_behind(parent, hole.slot).await? else {
            return Ok(None);
        };
        let origin = serde_json::json!({
            "x": hole.x, "y": hole.y, "view": hole.view, "max": max,
        });
        let scan = js::observe_frame(&origin.to_string());
        let mut reused = known.get(&id).copied();
        loop {
            let context = match reused {
                Some(c) => c,
                None => match self.world_in(&id).await? {
                    Some(c) => c,
                    None => return Ok(None),
                },
            };
            match self.eval_in(context, &scan).await? {
                Ok(v) => {
                    return Ok(match serde_json::from_value::<FrameScan>(v) {
                        Ok(scan) => Some((id, context, scan)),
                        Err(e) => {
                            tracing::debug!(error = %e, "unexpected frame scan");
                            None
                        }
                    });
                }
                // The frame has a new document since: make a world in it.
                Err(_) if reused.is_some() => reused = None,
                Err(e) => {
                    tracing::debug!(error = %e, "frame scan failed");
                    return Ok(None);
                }
            }
        }
    }

    /// The frame shown by iframe `slot` of a document's last scan (`parent`: that
    /// document's world, `None` for the top document). The iframe's handle is in
    /// [`OBJECTS`], released once per level.
    async fn frame_behind(
        &self,
        parent: Option<ExecutionContextId>,
        slot: usize,
    ) -> Result<Option<FrameId>, PoolError> {
        let mut params =
            EvaluateParams::new(format!("window[Symbol.for('surfgym.frames')][{slot}]"));
        params.object_group = Some(OBJECTS.into());
        let evaluated = self.eval_object(params, parent).await?;
        let object = evaluated.and_then(|ret| ret.result.object_id);
        let Some(object) = object else {
            return Ok(None);
        };
        let describe = DescribeNodeParams {
            object_id: Some(object),
            ..Default::default()
        };
        match self.call("DOM.describeNode", describe).await {
            Ok(d) => Ok(d.node.frame_id),
            Err(PoolError::Cdp { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Our isolated world in a frame (the same one for the frame's document every time).
    async fn world_in(&self, frame: &FrameId) -> Result<Option<ExecutionContextId>, PoolError> {
        let mut world = CreateIsolatedWorldParams::new(frame.clone());
        world.world_name = Some(js::WORLD.into());
        match self.call("Page.createIsolatedWorld", world).await {
            Ok(w) => Ok(Some(w.execution_context_id)),
            // Another renderer's frame (site isolation on a remote browser), or gone.
            Err(PoolError::Cdp { message, .. }) => {
                tracing::debug!(message, "cannot enter a cross-origin frame");
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// After an action on an element of a cross-origin frame, once the top document has
    /// settled: the frame's own document settled too (loaded, DOM quiet, none of its short
    /// timeouts pending: the probe runs in the frame's main world, where `js/timers.js`
    /// counts them), within what is left of `settle_max` and `settle_restless` of its own.
    /// A frame that went away meanwhile has nothing to wait for.
    pub(super) async fn settle_frame(
        &self,
        frame: usize,
        seq: u64,
        started: Instant,
    ) -> Result<(), PoolError> {
        let Some(id) = self.tab().numbering.frames.get(frame).map(|f| f.id.clone()) else {
            return Ok(());
        };
        let Ok(Some(main)) = self.tab().page.frame_execution_context(id).await else {
            return Ok(());
        };
        let probe = js::settle(seq, self.cfg.settle_quiet, PROBE_WAIT);
        let quiet_ms = self.cfg.settle_quiet.as_millis() as f64;
        let own = Instant::now();
        while started.elapsed() < self.cfg.settle_max && own.elapsed() < self.cfg.settle_restless {
            let Ok(v) = self.eval_in(main, &probe).await? else {
                return Ok(());
            };
            match serde_json::from_value::<Probe>(v) {
                Ok(p) if p.state == "complete" && p.quiet_ms >= quiet_ms && p.timers == 0 => {
                    return Ok(());
                }
                Ok(_) => {}
                Err(_) => return Ok(()),
            }
            tokio::time::sleep(SETTLE_POLL).await;
        }
        Ok(())
    }

    /// Evaluates one of our snippets in a frame's isolated world. A world that is gone
    /// (the frame navigated or was removed) is the inner error, not an infrastructure one.
    pub(super) async fn eval_in(
        &self,
        context: ExecutionContextId,
        expression: &str,
    ) -> Result<Result<Value, String>, PoolError> {
        match self
            .call("Runtime.evaluate", by_value(expression, Some(context)))
            .await
        {
            Ok(ret) => Ok(value_of(ret)),
            Err(PoolError::Cdp { message, .. }) => Ok(Err(format!(
                "the element's frame is gone ({message}); use the numbers of the latest observation"
            ))),
            Err(e) => Err(e),
        }
    }

    /// The first cross-origin frame of the last observation, in order, where `css`
    /// matches (`js/query.js` there), with what it read of the element.
    pub(super) async fn query_frames(
        &self,
        css: &str,
    ) -> Result<Option<(usize, Value)>, PoolError> {
        let js = js::query(css);
        let frames: Vec<_> = self.tab().numbering.contexts().collect();
        for (frame, context) in frames {
            if let Ok(v) = self.eval_in(context, &js).await?
                && !v.is_null()
            {
                return Ok(Some((frame, v)));
            }
        }
        Ok(None)
    }

    /// [`Session::query_frames`]' frame.
    pub(super) async fn frame_matching(&self, css: &str) -> Result<Option<usize>, PoolError> {
        Ok(self.query_frames(css).await?.map(|(frame, _)| frame))
    }

    /// Where the target of an action is: element numbers of a cross-origin frame become
    /// that frame's own numbers.
    pub(super) fn locate(&self, target: &Target) -> Located {
        let numbering = &self.tab().numbering;
        match target {
            Target::Element(n) => {
                let home = numbering.home(*n);
                Located {
                    target: Target::Element(home.local),
                    frame: home.frame,
                }
            }
            other => Located {
                target: other.clone(),
                frame: None,
            },
        }
    }

    /// The last observation's number of the first element `css` matches, when the top
    /// document (or a same-origin frame or shadow root in it) holds one and it was
    /// numbered; `None` otherwise, and whenever cross-origin frames were numbered too
    /// (their elements' numbers are spliced into the list, and a selector does not reach
    /// them). An invalid selector matches nothing.
    pub async fn element_number(&self, css: &str) -> Result<Option<u32>, PoolError> {
        if !self.tab().numbering.frames.is_empty() {
            return Ok(None);
        }
        Ok(match self.eval_ours(&js::number_of(css)).await? {
            Ok(v) => v.as_u64().and_then(|n| u32::try_from(n).ok()),
            Err(_) => None,
        })
    }

    /// Evaluates a snippet where a located target lives: the page, or its frame's world.
    pub(super) async fn eval_at(
        &self,
        frame: Option<usize>,
        expression: &str,
    ) -> Result<Result<Value, String>, PoolError> {
        match frame.and_then(|f| self.tab().numbering.frames.get(f)) {
            None => self.eval_ours(expression).await,
            Some(f) => self.eval_in(f.context, expression).await,
        }
    }

    /// Where frame `frame`'s viewport sits in the top one now (its page may have scrolled
    /// since the observation), each enclosing iframe brought into view first when `bring`.
    pub(super) async fn frame_origin(
        &self,
        frame: usize,
        bring: bool,
    ) -> Result<Result<(f64, f64), String>, PoolError> {
        // Outermost first: the chain of frames from the top document down to this one.
        let numbering = &self.tab().numbering;
        let mut chain = Vec::new();
        let mut at = Some(frame);
        while let Some(f) = at.and_then(|i| numbering.frames.get(i)) {
            chain.push(f.clone());
            at = f.parent;
        }
        chain.reverse();
        if bring && chain.len() > 1 {
            // Bringing an inner frame into view can scroll the outer ones again: place
            // them all once the scrolling is done.
            if let Err(e) = self.origin_along(&chain, true).await? {
                return Ok(Err(e));
            }
            return self.origin_along(&chain, false).await;
        }
        self.origin_along(&chain, bring).await
    }

    /// Adds up where each frame of `chain` (outermost first) sits in its parent.
    async fn origin_along(
        &self,
        chain: &[Frame],
        bring: bool,
    ) -> Result<Result<(f64, f64), String>, PoolError> {
        #[derive(Deserialize)]
        struct Origin {
            x: Option<f64>,
            y: Option<f64>,
            error: Option<String>,
        }
        let (mut x, mut y) = (0.0, 0.0);
        let mut inside: Option<ExecutionContextId> = None;
        for f in chain {
            let js = js::frame_origin(f.slot, bring);
            let v = match inside {
                None => self.eval_ours(&js).await?,
                Some(c) => self.eval_in(c, &js).await?,
            };
            let o = match v.map(serde_json::from_value::<Origin>) {
                Ok(Ok(o)) => o,
                Ok(Err(e)) => return Ok(Err(format!("could not place the frame: {e}"))),
                Err(e) => return Ok(Err(e)),
            };
            match (o.x, o.y, o.error) {
                (_, _, Some(e)) => return Ok(Err(e)),
                (Some(ox), Some(oy), None) => {
                    x += ox;
                    y += oy;
                }
                _ => return Ok(Err("could not place the frame".into())),
            }
            inside = Some(f.context);
        }
        Ok(Ok((x, y)))
    }
}
