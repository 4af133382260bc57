//! Plots as inline SVG, drawn on the server and shared by every server-rendered page
//! (training runs, campaign analysis): no script, no external resources, colours set by
//! classes (the CSP allows no inline styles). Every mark that stands for episodes may link
//! to them, and carries its value as a tooltip.

mod bars;
mod line;

pub use bars::{Bar, bars};
pub use line::{Point, Series, line};

/// Size and margins of every plot, in SVG units.
pub(crate) const W: f64 = 440.0;
pub(crate) const H: f64 = 220.0;
pub(crate) const LEFT: f64 = 48.0;
pub(crate) const RIGHT: f64 = 12.0;
pub(crate) const TOP: f64 = 12.0;
pub(crate) const BOTTOM: f64 = 36.0;

/// Text or an attribute value, escaped: every string from a page, a task, a model or a
/// run's config goes through this.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// A plot's axes.
pub struct Axes<'a> {
    /// Title (also the SVG's accessible name).
    pub title: &'a str,
    /// Horizontal axis label.
    pub x: &'a str,
    /// Vertical axis label.
    pub y: &'a str,
    /// Fixed vertical range (success rates: 0..1), else from the data.
    pub y_range: Option<(f64, f64)>,
    /// Format of vertical tick labels.
    pub percent: bool,
}

/// The smallest and largest finite values, widened when they are equal.
fn range(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if lo > hi {
        return None;
    }
    if hi - lo < 1e-9 {
        // One value (or all equal): give it room.
        let pad = if hi.abs() > 1e-9 { hi.abs() * 0.5 } else { 1.0 };
        return Some((lo - pad, hi + pad));
    }
    Some((lo, hi))
}

fn tick(v: f64, percent: bool) -> String {
    if percent {
        format!("{:.0}%", v * 100.0)
    } else if v.abs() >= 1000.0 || v.fract().abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

/// The figure's opening, the SVG's frame, the two axes, four horizontal grid lines with
/// their values, and the axis labels; `sy` maps a value to its height.
fn open(o: &mut String, axes: &Axes, (y0, y1): (f64, f64), sy: impl Fn(f64) -> f64) {
    use std::fmt::Write;
    let _ = write!(
        o,
        "<figure class=\"plot\"><figcaption>{t}</figcaption>\
         <svg viewBox=\"0 0 {W} {H}\" width=\"{W}\" height=\"{H}\" role=\"img\" aria-label=\"{t}\" \
         xmlns=\"http://www.w3.org/2000/svg\">",
        t = esc(axes.title)
    );
    let _ = write!(
        o,
        "<line class=\"axis\" x1=\"{LEFT}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\"/>\
         <line class=\"axis\" x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{b}\"/>",
        b = H - BOTTOM,
        r = W - RIGHT
    );
    for i in 0..=4 {
        let v = y0 + (y1 - y0) * f64::from(i) / 4.0;
        let y = sy(v);
        let _ = write!(
            o,
            "<line class=\"grid\" x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{r}\" y2=\"{y:.1}\"/>\
             <text class=\"tick\" x=\"{tx}\" y=\"{ty:.1}\" text-anchor=\"end\">{l}</text>",
            r = W - RIGHT,
            tx = LEFT - 4.0,
            ty = y + 4.0,
            l = esc(&tick(v, axes.percent))
        );
    }
    let _ = write!(
        o,
        "<text class=\"axis-label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
        LEFT + (W - LEFT - RIGHT) / 2.0,
        H - 4.0,
        esc(axes.x)
    );
    let _ = write!(
        o,
        "<text class=\"axis-label\" x=\"12\" y=\"{:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 12 {:.1})\">{}</text>",
        (H - BOTTOM) / 2.0,
        (H - BOTTOM) / 2.0,
        esc(axes.y)
    );
}

/// What a plot with nothing to draw shows.
fn empty(axes: &Axes) -> String {
    format!(
        "<figure class=\"plot\"><figcaption>{}</figcaption><p class=\"muted\">No points yet.</p></figure>",
        esc(axes.title)
    )
}

/// A mark, wrapped in a link when it has one.
fn linked(o: &mut String, href: Option<&str>, class: &str, mark: &str) {
    use std::fmt::Write;
    match href {
        Some(h) => {
            let _ = write!(o, "<a class=\"{class}\" href=\"{}\">{mark}</a>", esc(h));
        }
        None => o.push_str(mark),
    }
}
