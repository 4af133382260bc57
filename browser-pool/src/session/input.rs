//! Mouse and keyboard events as a person's would arrive: clicks of any button and count,
//! hovering, dragging (HTML5 drags included), key combinations.

use std::time::Duration;

use chromiumoxide::cdp::browser_protocol::input::{
    DispatchDragEventParams, DispatchDragEventType, DispatchKeyEventParams, DispatchKeyEventType,
    DispatchMouseEventParams, DispatchMouseEventType, DragData, EventDragIntercepted, MouseButton,
    SetInterceptDragsParams,
};
use futures::StreamExt;

use super::{ActReport, Session};
use crate::action::Target;
use crate::error::PoolError;
use crate::keys::{KeyCombo, Modifiers};

impl Session {
    /// One mouse event with the button state spelled out: `buttons` is the bit field of
    /// buttons held after the event (1 left, 2 right), `click_count` 2 for a double click.
    async fn mouse_with(
        &self,
        kind: DispatchMouseEventType,
        x: f64,
        y: f64,
        button: MouseButton,
        buttons: i64,
        click_count: i64,
    ) -> Result<(), PoolError> {
        let params = DispatchMouseEventParams {
            button: Some(button),
            buttons: Some(buttons),
            click_count: Some(click_count),
            ..DispatchMouseEventParams::new(kind, x, y)
        };
        self.input("Input.dispatchMouseEvent", params).await
    }

    /// A click of `button` at a point, `count` times in a row (2: a double click), as a
    /// person's arrives: the pointer moves there, then each press and release carries its
    /// click count (click, click, dblclick). Sent back to back: see [`Session::inputs`].
    pub(super) async fn click_at(
        &self,
        x: f64,
        y: f64,
        button: MouseButton,
        count: i64,
    ) -> Result<(), PoolError> {
        use DispatchMouseEventType::{MouseMoved, MousePressed, MouseReleased};
        let event = |kind, button, buttons, click_count| DispatchMouseEventParams {
            button: Some(button),
            buttons: Some(buttons),
            click_count: Some(click_count),
            ..DispatchMouseEventParams::new(kind, x, y)
        };
        // The bit of the button in the held-buttons field.
        let held = match &button {
            MouseButton::Right => 2,
            MouseButton::Middle => 4,
            _ => 1,
        };
        let mut events = vec![event(MouseMoved, MouseButton::None, 0, 0)];
        for n in 1..=count {
            events.push(event(MousePressed, button.clone(), held, n));
            events.push(event(MouseReleased, button.clone(), 0, n));
        }
        self.inputs("Input.dispatchMouseEvent", events).await
    }

    /// Clicks `target` with `button`, `count` times in a row (see [`Session::click_at`]).
    pub(super) async fn click_with(
        &self,
        target: &Target,
        button: MouseButton,
        count: i64,
    ) -> Result<ActReport, PoolError> {
        let r = match self.resolve(target).await? {
            Ok(r) => r,
            Err(e) => return Ok(ActReport::failed(e)),
        };
        let (x, y) = (r.x.unwrap_or_default(), r.y.unwrap_or_default());
        let click = match (&button, count) {
            (MouseButton::Right, _) => "right click",
            (_, 2) => "double click",
            _ => "click",
        };
        self.click_at(x, y, button, count).await?;
        Ok(ActReport {
            error: r
                .disabled
                .then(|| format!("the element is disabled; the {click} did nothing")),
            point: Some((x, y)),
        })
    }

    pub(super) async fn hover(&self, target: &Target) -> Result<ActReport, PoolError> {
        let r = match self.resolve(target).await? {
            Ok(r) => r,
            Err(e) => return Ok(ActReport::failed(e)),
        };
        let (x, y) = (r.x.unwrap_or_default(), r.y.unwrap_or_default());
        self.mouse_with(
            DispatchMouseEventType::MouseMoved,
            x,
            y,
            MouseButton::None,
            0,
            0,
        )
        .await?;
        Ok(ActReport {
            error: None,
            point: Some((x, y)),
        })
    }

    /// Presses on `from`, moves to `to` in steps and releases there. Drags are intercepted
    /// meanwhile: when the page starts an HTML5 drag (which synthesized mouse events cannot
    /// carry on their own), the rest of it is played as CDP drag events (enter, over, drop);
    /// otherwise the page sees an ordinary press, moves and release (mouse-event drags).
    pub(super) async fn drag(&self, from: &Target, to: &Target) -> Result<ActReport, PoolError> {
        let a = match self.resolve(from).await? {
            Ok(r) => r,
            Err(e) => return Ok(ActReport::failed(format!("drag source: {e}"))),
        };
        let b = match self.resolve(to).await? {
            Ok(r) => r,
            Err(e) => return Ok(ActReport::failed(format!("drag destination: {e}"))),
        };
        // Bringing the destination into view may have scrolled the source away.
        let a2 = match self.resolve(from).await? {
            Ok(r) => r,
            Err(e) => return Ok(ActReport::failed(format!("drag source: {e}"))),
        };
        if (a2.x, a2.y) != (a.x, a.y) {
            return Ok(ActReport::failed(
                "the drag source and destination do not fit in the viewport together",
            ));
        }
        let start = (a.x.unwrap_or_default(), a.y.unwrap_or_default());
        let end = (b.x.unwrap_or_default(), b.y.unwrap_or_default());
        if a.disabled {
            return Ok(ActReport {
                error: Some("the drag source is disabled".into()),
                point: Some(start),
            });
        }
        let mut intercepted = match self.page.event_listener::<EventDragIntercepted>().await {
            Ok(l) => Some(l),
            Err(e) => {
                tracing::debug!(error = %e, "no dragIntercepted listener; mouse events only");
                None
            }
        };
        if intercepted.is_some() {
            // A browser without drag interception still gets the mouse-event drag.
            match self
                .call(
                    "Input.setInterceptDrags",
                    SetInterceptDragsParams::new(true),
                )
                .await
            {
                Ok(_) => {}
                Err(PoolError::Cdp { message, .. }) => {
                    tracing::debug!(message, "drag interception unavailable");
                    intercepted = None;
                }
                Err(e) => return Err(e),
            }
        }
        let result = self.drag_moves(start, end, intercepted.as_mut()).await;
        if intercepted.is_some() {
            let off = self
                .call(
                    "Input.setInterceptDrags",
                    SetInterceptDragsParams::new(false),
                )
                .await;
            result?;
            off?;
        } else {
            result?;
        }
        Ok(ActReport {
            error: None,
            point: Some(start),
        })
    }

    async fn drag_moves(
        &self,
        start: (f64, f64),
        end: (f64, f64),
        mut intercepted: Option<&mut chromiumoxide::listeners::EventStream<EventDragIntercepted>>,
    ) -> Result<(), PoolError> {
        use DispatchMouseEventType::{MouseMoved, MousePressed, MouseReleased};
        const STEPS: usize = 12;
        self.mouse_with(MouseMoved, start.0, start.1, MouseButton::None, 0, 0)
            .await?;
        self.mouse_with(MousePressed, start.0, start.1, MouseButton::Left, 1, 1)
            .await?;
        let mut data: Option<DragData> = None;
        let mut entered = false;
        for i in 1..=STEPS {
            let t = i as f64 / STEPS as f64;
            let (x, y) = (
                start.0 + (end.0 - start.0) * t,
                start.1 + (end.1 - start.1) * t,
            );
            match &data {
                None => {
                    self.mouse_with(MouseMoved, x, y, MouseButton::Left, 1, 0)
                        .await?;
                    if let Some(events) = intercepted.as_deref_mut() {
                        // The event follows the move that started the drag by a hair.
                        let wait = if i == STEPS { 150 } else { 15 };
                        if let Ok(Some(ev)) =
                            tokio::time::timeout(Duration::from_millis(wait), events.next()).await
                        {
                            data = Some(ev.data.clone());
                        }
                    }
                }
                Some(d) => {
                    let kind = if entered {
                        DispatchDragEventType::DragOver
                    } else {
                        DispatchDragEventType::DragEnter
                    };
                    entered = true;
                    self.input(
                        "Input.dispatchDragEvent",
                        DispatchDragEventParams::new(kind, x, y, d.clone()),
                    )
                    .await?;
                }
            }
        }
        if let Some(d) = data {
            for kind in [
                DispatchDragEventType::DragEnter,
                DispatchDragEventType::DragOver,
                DispatchDragEventType::Drop,
            ] {
                if kind == DispatchDragEventType::DragEnter && entered {
                    continue;
                }
                self.input(
                    "Input.dispatchDragEvent",
                    DispatchDragEventParams::new(kind, end.0, end.1, d.clone()),
                )
                .await?;
            }
        }
        self.mouse_with(MouseReleased, end.0, end.1, MouseButton::Left, 0, 1)
            .await
    }

    async fn key_event(
        &self,
        kind: DispatchKeyEventType,
        key: &str,
        code: &str,
        key_code: i64,
        text: Option<&str>,
        modifiers: Modifiers,
    ) -> Result<(), PoolError> {
        let params = DispatchKeyEventParams {
            modifiers: Some(modifiers.bits()),
            key: Some(key.to_string()),
            code: (!code.is_empty()).then(|| code.to_string()),
            windows_virtual_key_code: Some(key_code),
            native_virtual_key_code: Some(key_code),
            text: text.map(str::to_string),
            unmodified_text: text.map(str::to_string),
            ..DispatchKeyEventParams::new(kind)
        };
        self.input("Input.dispatchKeyEvent", params).await
    }

    pub(super) async fn press(&self, keys: &KeyCombo) -> Result<ActReport, PoolError> {
        const MODS: [(Modifiers, &str, i64); 4] = [
            (Modifiers::CONTROL, "Control", 17),
            (Modifiers::ALT, "Alt", 18),
            (Modifiers::SHIFT, "Shift", 16),
            (Modifiers::META, "Meta", 91),
        ];
        let held: Vec<_> = MODS
            .iter()
            .filter(|(m, ..)| keys.modifiers.contains(*m))
            .collect();
        for (_, name, code) in &held {
            self.key_event(
                DispatchKeyEventType::RawKeyDown,
                name,
                &format!("{name}Left"),
                *code,
                None,
                keys.modifiers,
            )
            .await?;
        }
        let def = keys.key_def();
        let down = if def.text.is_some() {
            DispatchKeyEventType::KeyDown
        } else {
            DispatchKeyEventType::RawKeyDown
        };
        self.key_event(
            down,
            &def.key,
            &def.code,
            def.key_code,
            def.text.as_deref(),
            keys.modifiers,
        )
        .await?;
        self.key_event(
            DispatchKeyEventType::KeyUp,
            &def.key,
            &def.code,
            def.key_code,
            None,
            keys.modifiers,
        )
        .await?;
        for (_, name, code) in held.iter().rev() {
            self.key_event(
                DispatchKeyEventType::KeyUp,
                name,
                &format!("{name}Left"),
                *code,
                None,
                Modifiers::default(),
            )
            .await?;
        }
        Ok(ActReport::default())
    }
}
