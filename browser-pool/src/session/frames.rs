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

use super::{PROBE_WAIT, Probe, RESTLESS_MAX, SETTLE_POLL, Session, by_value, value_of};
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

/// A cross-origin frame scanned by the last observation.
#[derive(Debug, Clone)]
struct Frame {
    /// The frame itself (its main world is where its page's timers are counted).
    id: FrameId,
    /// The isolated world the scan ran in, where its elements are kept.
    context: ExecutionContextId,
    /// The frame whose document holds its iframe element (`None`: the top document).
    parent: Option<usize>,
    /// Its iframe element's index in the parent's last scan.
    slot: usize,
}

/// Which document an element number lives in and its number there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Home {
    /// Index into [`Numbering::frames`]; `None` for the top document.
    frame: Option<usize>,
    local: u32,
}

/// How the last observation's element numbers map to documents. Empty when no
/// cross-origin frame was scanned: numbers are then the top document's own.
#[derive(Debug, Default)]
pub(crate) struct Numbering {
    frames: Vec<Frame>,
    homes: Vec<Home>,
}

/// Where an action's target is to be looked for.
pub(super) struct Located {
    /// The target as the document that holds it numbers it.
    pub(super) target: Target,
    /// The cross-origin frame holding it (an index into the numbering), if any.
    pub(super) frame: Option<usize>,
}

/// One scanned document and the cross-origin frames spliced into it.
struct Doc {
    elements: Vec<Element>,
    kids: Vec<Kid>,
}

struct Kid {
    at: usize,
    frame: usize,
    doc: Doc,
}

/// Lists every document's elements in one depth-first order, a frame's where its hole is,
/// numbers them 1.. in that order, and records where each number lives.
fn flatten(doc: Doc, frame: Option<usize>, elements: &mut Vec<Element>, homes: &mut Vec<Home>) {
    let mut kids = doc.kids.into_iter().peekable();
    for (i, e) in doc.elements.into_iter().enumerate() {
        while let Some(kid) = kids.next_if(|k| k.at <= i) {
            flatten(kid.doc, Some(kid.frame), elements, homes);
        }
        homes.push(Home {
            frame,
            local: i as u32 + 1,
        });
        elements.push(e);
    }
    for kid in kids {
        flatten(kid.doc, Some(kid.frame), elements, homes);
    }
}

/// The numbered list and its numbering for a top document and the frames scanned in it.
fn splice(top: Vec<Element>, kids: Vec<Kid>, frames: Vec<Frame>) -> (Vec<Element>, Numbering) {
    if frames.is_empty() {
        return (top, Numbering::default());
    }
    let mut elements = Vec::new();
    let mut homes = Vec::new();
    flatten(
        Doc {
            elements: top,
            kids,
        },
        None,
        &mut elements,
        &mut homes,
    );
    for (i, e) in elements.iter_mut().enumerate() {
        e.id = i as u32 + 1;
    }
    (elements, Numbering { frames, homes })
}

/// The scanned frames whose iframe sits in `parent`'s document, as a tree (frames of one
/// document are in their holes' order: they were scanned in it).
fn kids_of(
    parent: Option<usize>,
    frames: &[Frame],
    docs: &mut [Option<(usize, Vec<Element>)>],
) -> Vec<Kid> {
    let mut kids = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        if f.parent != parent {
            continue;
        }
        let Some((at, elements)) = docs[i].take() else {
            continue;
        };
        kids.push(Kid {
            at,
            frame: i,
            doc: Doc {
                elements,
                kids: kids_of(Some(i), frames, docs),
            },
        });
    }
    kids
}

impl Numbering {
    /// Where element `n` lives and its number there. A number past the list stays as it
    /// is: the top document has fewer elements than the list, so its lookup reports that
    /// number gone.
    fn home(&self, n: u32) -> Home {
        n.checked_sub(1)
            .and_then(|i| self.homes.get(i as usize))
            .copied()
            .unwrap_or(Home {
                frame: None,
                local: n,
            })
    }

    /// The global number of element `local` of frame `frame` (`None`: the top document).
    pub(super) fn global(&self, frame: Option<usize>, local: u32) -> Option<usize> {
        if self.frames.is_empty() {
            return frame.is_none().then_some(local as usize);
        }
        let h = Home { frame, local };
        self.homes.iter().position(|x| *x == h).map(|i| i + 1)
    }

    /// The isolated worlds of the scanned frames, by index.
    pub(super) fn contexts(&self) -> impl Iterator<Item = (usize, ExecutionContextId)> + '_ {
        self.frames.iter().enumerate().map(|(i, f)| (i, f.context))
    }
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
    /// counts them), within what is left of `settle_max` and [`RESTLESS_MAX`] of its own.
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
        while started.elapsed() < self.cfg.settle_max && own.elapsed() < RESTLESS_MAX {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn el(label: &str) -> Element {
        serde_json::from_value(serde_json::json!({
            "id": 0, "tag": "button", "role": "button", "label": label,
            "bbox": {"x": 0, "y": 0, "width": 1, "height": 1}, "in_viewport": true,
        }))
        .unwrap()
    }

    fn frame(parent: Option<usize>, slot: usize) -> Frame {
        Frame {
            id: FrameId::new(format!("F{slot}")),
            context: ExecutionContextId::new(100 + slot as i64),
            parent,
            slot,
        }
    }

    #[test]
    fn frames_are_spliced_in_where_they_sit_and_numbers_map_back() {
        // Top: A, [frame 0: X, [frame 2: Z], Y], B, [frame 1: W] at the end; frames are
        // indexed a level at a time, as they are scanned.
        let frames = vec![frame(None, 0), frame(None, 1), frame(Some(0), 0)];
        let mut docs = vec![
            Some((1, vec![el("X"), el("Y")])),
            Some((2, vec![el("W")])),
            Some((1, vec![el("Z")])),
        ];
        let kids = kids_of(None, &frames, &mut docs);
        let (els, numbering) = splice(vec![el("A"), el("B")], kids, frames);
        let order: Vec<(&str, u32)> = els.iter().map(|e| (e.label.as_str(), e.id)).collect();
        assert_eq!(
            order,
            vec![("A", 1), ("X", 2), ("Z", 3), ("Y", 4), ("B", 5), ("W", 6)]
        );
        let homes: Vec<(Option<usize>, u32)> = (1..=6)
            .map(|n| numbering.home(n))
            .map(|h| (h.frame, h.local))
            .collect();
        assert_eq!(
            homes,
            vec![
                (None, 1),
                (Some(0), 1),
                (Some(2), 1),
                (Some(0), 2),
                (None, 2),
                (Some(1), 1)
            ]
        );
        assert_eq!(
            numbering.home(7),
            Home {
                frame: None,
                local: 7
            },
            "past the list: the top's own lookup finds nothing"
        );
        assert_eq!(numbering.home(0).local, 0);
        assert_eq!(numbering.global(Some(2), 1), Some(3));
        assert_eq!(numbering.global(None, 2), Some(5));
        assert_eq!(numbering.global(Some(1), 2), None);
    }

    #[test]
    fn without_frames_numbers_are_the_top_documents() {
        let (els, numbering) = splice(vec![el("A")], vec![], vec![]);
        assert_eq!(els[0].id, 0, "left as the scan numbered them");
        assert_eq!(
            numbering.home(7),
            Home {
                frame: None,
                local: 7
            }
        );
        assert_eq!(numbering.global(None, 4), Some(4));
        assert_eq!(numbering.global(Some(0), 1), None);
    }
}
