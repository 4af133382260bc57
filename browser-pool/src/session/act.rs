//! Running one action: marking the document it starts from, finding where its target is
//! (an element number, a selector or a point; in a cross-origin frame too), doing it,
//! and settling what it led to. Mouse and keyboard events are `input.rs`'s, navigation
//! `navigation.rs`'s, tabs `tabs.rs`'s.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use chromiumoxide::cdp::browser_protocol::input::{
    DispatchMouseEventParams, DispatchMouseEventType, InsertTextParams, MouseButton,
};
use serde::Deserialize;
use serde_json::Value;

use super::{ActReport, Session};
use crate::action::{Action, Direction, Scroll, Target};
use crate::error::PoolError;
use crate::js;
use crate::keys::KeyCombo;

#[derive(Deserialize)]
pub(super) struct Resolved {
    pub(super) x: Option<f64>,
    pub(super) y: Option<f64>,
    error: Option<String>,
    input_type: Option<String>,
    tag: Option<String>,
    #[serde(default)]
    pub(super) disabled: bool,
    /// The cross-origin frame the element is in (see `session/frames.rs`).
    #[serde(skip)]
    frame: Option<usize>,
}

#[derive(Deserialize)]
struct ScrollArea {
    x: Option<f64>,
    y: Option<f64>,
    amount: Option<f64>,
    top: Option<f64>,
    error: Option<String>,
}

#[derive(Deserialize)]
struct Mode {
    mode: Option<String>,
    error: Option<String>,
}

/// What `js/resolve.js` answered, as a point to act at or the reason there is none.
fn resolved(answer: Result<Value, String>) -> Result<Resolved, String> {
    match answer {
        Ok(v) => match serde_json::from_value::<Resolved>(v) {
            Ok(r) if r.error.is_some() => Err(r.error.unwrap_or_default()),
            Ok(r) if r.x.is_some() && r.y.is_some() => Ok(r),
            Ok(_) | Err(_) => Err("could not locate the element".into()),
        },
        Err(e) => Err(format!("could not locate the element: {e}")),
    }
}

/// Inputs whose value is set directly: clicking them opens pickers that swallow keys.
const VALUE_INPUTS: &[&str] = &[
    "date",
    "time",
    "datetime-local",
    "month",
    "week",
    "color",
    "range",
];

impl Session {
    /// Runs one action and waits for the page to settle.
    ///
    /// A failed action is not an error: its message is returned in the report and shown in
    /// the next observation. `answer` and `stop` do nothing here; they end the episode.
    pub async fn act(&mut self, action: &Action) -> Result<ActReport, PoolError> {
        self.action_seq += 1;
        let seq = self.action_seq;
        if action.is_terminal() {
            return Ok(ActReport::default());
        }
        // Actions that first locate an element in the page mark the document in that same
        // evaluation (see `resolve`); the others mark it here. Best effort: a page that is
        // mid-navigation has no document to mark.
        let first_target = match action {
            Action::Click(t)
            | Action::DoubleClick(t)
            | Action::RightClick(t)
            | Action::Hover(t)
            | Action::Drag { from: t, .. }
            | Action::Type { target: t, .. }
            | Action::Select { target: t, .. } => Some(t),
            _ => None,
        };
        let deferred = matches!(first_target, Some(Target::Element(_) | Target::Selector(_)));
        // An action on an element of a cross-origin frame waits for that frame to settle too.
        let in_frame = match action {
            Action::ScrollElement { target, .. } => Some(target),
            _ => first_target,
        }
        .and_then(|t| self.locate(t).frame);
        let started = Instant::now();
        self.pending_prepare
            .store(if deferred { seq } else { 0 }, Ordering::SeqCst);
        if !deferred {
            self.mark(&js::prepare(seq)).await?;
        }
        let before = self.stuck_marks();
        let tab_before = self.tab().target.clone();
        let report = match action {
            Action::Click(target) => self.click_with(target, MouseButton::Left, 1).await?,
            Action::DoubleClick(target) => self.click_with(target, MouseButton::Left, 2).await?,
            Action::RightClick(target) => self.click_with(target, MouseButton::Right, 1).await?,
            Action::Hover(target) => self.hover(target).await?,
            Action::Drag { from, to } => self.drag(from, to).await?,
            Action::Type {
                target,
                text,
                clear,
            } => self.type_text(target, text, *clear).await?,
            Action::Select { target, option } => self.select(target, option).await?,
            Action::Press(keys) => self.press(keys).await?,
            Action::Scroll(s) => self.scroll(s).await?,
            Action::ScrollElement { target, direction } => {
                self.scroll_element(target, *direction).await?
            }
            Action::Goto(url) => self.goto(url).await?,
            Action::Back => self.back().await?,
            Action::Forward => self.forward().await?,
            Action::Wait(ms) => {
                let ms = (*ms).min(crate::action::MAX_WAIT_MS);
                tokio::time::sleep(Duration::from_millis(u64::from(ms))).await;
                ActReport::default()
            }
            Action::SwitchTab(n) => self.switch_tab(*n).await?,
            Action::CloseTab(n) => self.close_tab(*n).await?,
            Action::Answer(_) | Action::Stop => unreachable!("terminal actions return early"),
        };
        self.pending_prepare.store(0, Ordering::SeqCst);
        self.settle(seq, before).await?;
        if let Some(frame) = in_frame
            && self.tab().target == tab_before
        {
            self.settle_frame(frame, seq, started).await?;
        }
        // A popup the action opened becomes the active tab; it must settle too.
        self.absorb_tabs().await?;
        if self.tab().target != tab_before {
            self.settle(seq, before).await?;
        }
        self.last_error = report.error.clone();
        if seq == 1 {
            // The episode's first page is up: the browser can open the next episode's
            // context now without slowing that navigation down.
            self.browser.refill_standby(&self.cfg);
        }
        Ok(report)
    }

    pub(super) async fn resolve(
        &self,
        target: &Target,
    ) -> Result<Result<Resolved, String>, PoolError> {
        if let Target::Point { x, y } = target {
            if let Some(e) = self.outside_viewport(*x, *y) {
                return Ok(Err(e));
            }
            return Ok(Ok(Resolved {
                x: Some(*x),
                y: Some(*y),
                error: None,
                input_type: None,
                tag: None,
                disabled: false,
                frame: None,
            }));
        }
        let mut at = self.locate(target);
        let resolve = js::resolve(&at.target);
        let first = match self.pending_prepare.swap(0, Ordering::SeqCst) {
            0 => self.eval_at(at.frame, &resolve).await?,
            // The mark goes to the page's main world, the resolution to our world: sent
            // together, they cost one round trip (a session's calls run in order).
            seq => {
                let prepare = js::prepare(seq);
                let (marked, found) =
                    tokio::join!(self.evaluate(&prepare), self.eval_at(at.frame, &resolve));
                let _ = marked?;
                found?
            }
        };
        let mut r = match resolved(first) {
            Ok(r) => r,
            Err(e) => {
                // A selector the top document (and its same-origin frames) does not match
                // may match in a cross-origin frame the last observation saw.
                let frame = match &at.target {
                    Target::Selector(css)
                        if at.frame.is_none() && e.starts_with("no element matches") =>
                    {
                        self.frame_matching(css).await?
                    }
                    _ => None,
                };
                let Some(frame) = frame else {
                    return Ok(Err(e));
                };
                at.frame = Some(frame);
                match resolved(self.eval_at(at.frame, &resolve).await?) {
                    Ok(r) => r,
                    Err(e) => return Ok(Err(e)),
                }
            }
        };
        r.frame = at.frame;
        if let Some(frame) = at.frame {
            // The point is in the frame's own viewport: add where the frame sits now.
            let (ox, oy) = match self.frame_origin(frame, true).await? {
                Ok(o) => o,
                Err(e) => return Ok(Err(e)),
            };
            let (x, y) = (r.x.unwrap_or_default() + ox, r.y.unwrap_or_default() + oy);
            if x < 0.0 || y < 0.0 || self.outside_viewport(x, y).is_some() {
                return Ok(Err(
                    "the element's frame cannot be scrolled into view".into()
                ));
            }
            (r.x, r.y) = (Some(x), Some(y));
        }
        Ok(Ok(r))
    }

    /// Why a point (action coordinates are never negative) cannot be acted at, if it
    /// lies past the viewport's right or bottom edge.
    fn outside_viewport(&self, x: f64, y: f64) -> Option<String> {
        let (w, h) = (
            f64::from(self.cfg.viewport_width),
            f64::from(self.cfg.viewport_height),
        );
        (x >= w || y >= h).then(|| format!("point ({x}, {y}) is outside the {w}x{h} viewport"))
    }

    async fn scroll_element(
        &self,
        target: &Target,
        direction: Direction,
    ) -> Result<ActReport, PoolError> {
        let at = self.locate(target);
        let (id, css, x, y) = match &at.target {
            Target::Element(n) => (
                n.to_string(),
                "null".to_string(),
                "null".into(),
                "null".into(),
            ),
            Target::Selector(c) => (
                "null".to_string(),
                serde_json::to_string(c).expect("strings always serialize"),
                "null".into(),
                "null".into(),
            ),
            Target::Point { x, y } => {
                if let Some(e) = self.outside_viewport(*x, *y) {
                    return Ok(ActReport::failed(e));
                }
                (
                    "null".to_string(),
                    "null".to_string(),
                    x.to_string(),
                    y.to_string(),
                )
            }
        };
        let down = direction == Direction::Down;
        let js = js::scroll_area(&id, &css, &x, &y, down);
        let area = match self.eval_at(at.frame, &js).await? {
            Ok(v) => match serde_json::from_value::<ScrollArea>(v) {
                Ok(a) if a.error.is_some() => {
                    return Ok(ActReport::failed(a.error.unwrap_or_default()));
                }
                Ok(a) => a,
                Err(e) => return Ok(ActReport::failed(format!("could not scroll: {e}"))),
            },
            Err(e) => return Ok(ActReport::failed(format!("could not scroll: {e}"))),
        };
        let (Some(mut px), Some(mut py), Some(amount)) = (area.x, area.y, area.amount) else {
            return Ok(ActReport::failed("could not locate the scrollable area"));
        };
        if let Some(frame) = at.frame {
            match self.frame_origin(frame, true).await? {
                Ok((ox, oy)) => (px, py) = (px + ox, py + oy),
                Err(e) => return Ok(ActReport::failed(e)),
            }
        }
        let delta = if down { amount } else { -amount };
        let params = DispatchMouseEventParams {
            delta_x: Some(0.0),
            delta_y: Some(delta),
            ..DispatchMouseEventParams::new(DispatchMouseEventType::MouseWheel, px, py)
        };
        self.input("Input.dispatchMouseEvent", params).await?;
        let read = "(window.__sgScrollArea || {}).scrollTop";
        let before = area.top.map(Value::from);
        let mut moved = false;
        for _ in 0..10 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let now = self.eval_at(at.frame, read).await?.ok();
            if now.as_ref().and_then(Value::as_f64) != before.as_ref().and_then(Value::as_f64) {
                moved = true;
                break;
            }
        }
        let _ = self
            .eval_at(at.frame, "delete window.__sgScrollArea")
            .await?;
        Ok(ActReport {
            error: (!moved).then(|| {
                "the area did not scroll (something else is under the pointer)".to_string()
            }),
            point: Some((px, py)),
        })
    }

    async fn type_text(
        &self,
        target: &Target,
        text: &str,
        clear: bool,
    ) -> Result<ActReport, PoolError> {
        let r = match self.resolve(target).await? {
            Ok(r) => r,
            Err(e) => return Ok(ActReport::failed(e)),
        };
        let point = (r.x.unwrap_or_default(), r.y.unwrap_or_default());
        if r.disabled {
            return Ok(ActReport {
                error: Some("the element is disabled".into()),
                point: Some(point),
            });
        }
        if let Target::Point { .. } = target {
            self.click_at(point.0, point.1, MouseButton::Left, 1)
                .await?;
            if clear {
                self.press(&KeyCombo::parse("Control+a").expect("valid combo"))
                    .await?;
            }
            if !text.is_empty() {
                self.input("Input.insertText", InsertTextParams::new(text))
                    .await?;
            }
            return Ok(ActReport {
                error: None,
                point: Some(point),
            });
        }
        let picker = r
            .input_type
            .as_deref()
            .is_some_and(|t| VALUE_INPUTS.contains(&t));
        if !picker && r.tag.as_deref() != Some("select") {
            self.click_at(point.0, point.1, MouseButton::Left, 1)
                .await?;
        }
        let local = self.locate(target).target;
        let mode = match self
            .eval_at(r.frame, &js::fill(&local, text, clear))
            .await?
        {
            Ok(v) => serde_json::from_value::<Mode>(v).unwrap_or(Mode {
                mode: None,
                error: Some("could not prepare the element for typing".into()),
            }),
            Err(e) => Mode {
                mode: None,
                error: Some(e),
            },
        };
        if let Some(e) = mode.error {
            return Ok(ActReport {
                error: Some(e),
                point: Some(point),
            });
        }
        if mode.mode.as_deref() == Some("type") && !text.is_empty() {
            self.input("Input.insertText", InsertTextParams::new(text))
                .await?;
        }
        Ok(ActReport {
            error: None,
            point: Some(point),
        })
    }

    async fn select(&self, target: &Target, option: &str) -> Result<ActReport, PoolError> {
        if let Target::Point { .. } = target {
            return Ok(ActReport::failed(
                "select needs an element number or css=, not a point",
            ));
        }
        let r = match self.resolve(target).await? {
            Ok(r) => r,
            Err(e) => return Ok(ActReport::failed(e)),
        };
        let point = r.x.zip(r.y);
        let local = self.locate(target).target;
        let outcome = match self.eval_at(r.frame, &js::select(&local, option)).await? {
            Ok(v) => serde_json::from_value::<Mode>(v).ok().and_then(|m| m.error),
            Err(e) => Some(e),
        };
        Ok(ActReport {
            error: outcome,
            point,
        })
    }

    async fn scroll(&self, scroll: &Scroll) -> Result<ActReport, PoolError> {
        let (w, h) = (
            f64::from(self.cfg.viewport_width),
            f64::from(self.cfg.viewport_height),
        );
        let (dx, dy) = match scroll {
            Scroll::Down => (0.0, h * 0.8),
            Scroll::Up => (0.0, -h * 0.8),
            Scroll::By { dx, dy } => (*dx, *dy),
        };
        let before = self
            .eval_ours("[window.scrollX, window.scrollY]")
            .await?
            .ok();
        let params = DispatchMouseEventParams {
            delta_x: Some(dx),
            delta_y: Some(dy),
            ..DispatchMouseEventParams::new(DispatchMouseEventType::MouseWheel, w / 2.0, h / 2.0)
        };
        self.input("Input.dispatchMouseEvent", params).await?;
        // Wheel scrolling is applied asynchronously by the compositor.
        let mut after = before.clone();
        for _ in 0..10 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            after = self
                .eval_ours("[window.scrollX, window.scrollY]")
                .await?
                .ok();
            if after != before {
                break;
            }
        }
        let error = (after == before).then(|| "the page did not scroll (already at the edge, or nothing scrollable under the pointer)".to_string());
        Ok(ActReport { error, point: None })
    }
}
