//! What a solver reads of the page: the visible elements by role and label, clicking an
//! element where nothing covers it, and the few actions every solver ends with.

use browser_pool::{Action, Element, Target};

use super::Step;
use crate::{PastStep, StepInput};

/// What a solver looks at.
pub(super) struct Page<'a> {
    pub(super) goal: &'a str,
    pub(super) elements: &'a [Element],
    pub(super) step: u32,
    pub(super) input: &'a StepInput,
}

pub(super) fn norm(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

impl Page<'_> {
    pub(super) fn visible(&self) -> impl Iterator<Item = &Element> {
        self.elements
            .iter()
            .filter(|e| e.in_viewport && e.bbox.width > 0.0 && e.bbox.height > 0.0)
    }

    /// The first visible element with exactly this label (case and spacing ignored),
    /// preferring the given roles in order.
    pub(super) fn labelled(&self, label: &str, roles: &[&str]) -> Option<&Element> {
        let want = norm(label);
        let matching = || self.visible().filter(|e| norm(&e.label) == want);
        roles
            .iter()
            .find_map(|r| matching().find(|e| e.role == *r))
            .or_else(|| matching().next())
    }

    pub(super) fn buttons(&self) -> impl Iterator<Item = &Element> {
        self.visible().filter(|e| e.role == "button")
    }

    pub(super) fn button(&self, label: &str) -> Result<&Element, String> {
        self.labelled(label, &["button"])
            .filter(|e| e.role == "button")
            .ok_or_else(|| format!("no button labelled {label:?} on the page"))
    }

    pub(super) fn textboxes(&self) -> Vec<&Element> {
        self.visible()
            .filter(|e| matches!(e.role.as_str(), "textbox" | "searchbox" | "spinbutton"))
            .collect()
    }

    pub(super) fn textbox_of_type(&self, input_type: &str) -> Result<&Element, String> {
        self.textboxes()
            .into_iter()
            .find(|e| e.input_type.as_deref() == Some(input_type))
            .ok_or_else(|| format!("no {input_type} field on the page"))
    }

    pub(super) fn of_role(&self, role: &str) -> Vec<&Element> {
        self.visible().filter(|e| e.role == role).collect()
    }

    /// Clicks `e` where nothing else is drawn over it: at its centre by number when that is
    /// clear, else at the clear point of its box nearest the centre (MiniWoB places some
    /// buttons so that they overlap). Elements that contain `e` or lie inside it (a tab and
    /// its link, a dialog and its buttons) do not count as covering it.
    pub(super) fn click(&self, e: &Element, why: impl Into<String>) -> Step {
        let b = e.bbox;
        let inside = |r: &browser_pool::Rect, x: f64, y: f64| {
            x >= r.x && x <= r.x + r.width && y >= r.y && y <= r.y + r.height
        };
        let contains = |outer: &browser_pool::Rect, inner: &browser_pool::Rect| {
            inner.x >= outer.x - 1.0
                && inner.y >= outer.y - 1.0
                && inner.x + inner.width <= outer.x + outer.width + 1.0
                && inner.y + inner.height <= outer.y + outer.height + 1.0
        };
        let others: Vec<&browser_pool::Rect> = self
            .visible()
            .filter(|o| o.id != e.id && !contains(&o.bbox, &b) && !contains(&b, &o.bbox))
            .map(|o| &o.bbox)
            .collect();
        let clear = |x: f64, y: f64| !others.iter().any(|r| inside(r, x, y));
        let (cx, cy) = b.center();
        if clear(cx, cy) {
            return click(e, why);
        }
        const N: usize = 9;
        let mut best: Option<(f64, f64, f64)> = None;
        for i in 0..N {
            for j in 0..N {
                let x = b.x + b.width * (0.1 + 0.8 * i as f64 / (N - 1) as f64);
                let y = b.y + b.height * (0.1 + 0.8 * j as f64 / (N - 1) as f64);
                let d = (x - cx).powi(2) + (y - cy).powi(2);
                if clear(x, y) && best.is_none_or(|(_, _, bd)| d < bd) {
                    best = Some((x, y, d));
                }
            }
        }
        match best {
            Some((x, y, _)) => Ok((
                Action::Click(Target::Point {
                    x: x.round(),
                    y: y.round(),
                }),
                format!("{} (at a point of [{}] nothing covers)", why.into(), e.id),
            )),
            None => click(e, why),
        }
    }

    /// The step before this one, if any.
    pub(super) fn last_step(&self) -> Option<&PastStep> {
        self.input.history.last()
    }
}

pub(super) fn click(e: &Element, why: impl Into<String>) -> Step {
    Ok((Action::Click(Target::Element(e.id)), why.into()))
}

pub(super) fn type_into(e: &Element, text: &str, why: impl Into<String>) -> Step {
    Ok((
        Action::Type {
            target: Target::Element(e.id),
            text: text.to_string(),
            clear: true,
        },
        why.into(),
    ))
}

pub(super) fn submit(p: &Page<'_>) -> Step {
    let b = p
        .buttons()
        .find(|e| matches!(norm(&e.label).as_str(), "submit" | "login" | "ok"))
        .ok_or("no submit button on the page")?;
    p.click(b, format!("everything is in place: press {:?}", b.label))
}

pub(super) fn click_named(p: &Page<'_>, label: &str) -> Step {
    let e = p
        .labelled(label, &["button", "link", "tab"])
        .ok_or_else(|| format!("nothing labelled {label:?} on the page"))?;
    p.click(e, format!("the goal names {label:?}: click it"))
}
