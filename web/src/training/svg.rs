//! Line plots as inline SVG, drawn on the server: no script, no external resources, and
//! colours set by attributes and classes (the CSP allows no inline styles). A point may
//! link somewhere (an iteration's episodes) and carries its value as a tooltip.

use std::fmt::Write;

use super::html::esc;

const W: f64 = 440.0;
const H: f64 = 220.0;
const LEFT: f64 = 48.0;
const RIGHT: f64 = 12.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 36.0;

/// One point.
pub struct Point {
    /// Horizontal value.
    pub x: f64,
    /// Vertical value.
    pub y: f64,
    /// Tooltip.
    pub label: String,
    /// Where clicking it goes.
    pub href: Option<String>,
}

/// One line.
pub struct Series {
    /// Legend.
    pub name: &'static str,
    /// CSS class giving its colour (`s0`, `s1`, …).
    pub class: &'static str,
    /// Points in x order.
    pub points: Vec<Point>,
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

/// The plot, or a note that there is nothing to plot yet.
pub fn plot(axes: &Axes, series: &[Series]) -> String {
    let all = || series.iter().flat_map(|s| s.points.iter());
    let (Some((x0, x1)), Some((y0, y1))) = (
        range(all().map(|p| p.x)),
        axes.y_range.or_else(|| range(all().map(|p| p.y))),
    ) else {
        return format!(
            "<figure class=\"plot\"><figcaption>{}</figcaption><p class=\"muted\">No points yet.</p></figure>",
            esc(axes.title)
        );
    };
    let sx = |x: f64| LEFT + (x - x0) / (x1 - x0) * (W - LEFT - RIGHT);
    let sy = |y: f64| H - BOTTOM - (y - y0) / (y1 - y0) * (H - TOP - BOTTOM);
    let mut o = String::new();
    let _ = write!(
        o,
        "<figure class=\"plot\"><figcaption>{t}</figcaption>\
         <svg viewBox=\"0 0 {W} {H}\" width=\"{W}\" height=\"{H}\" role=\"img\" aria-label=\"{t}\" \
         xmlns=\"http://www.w3.org/2000/svg\">",
        t = esc(axes.title)
    );
    // Axes and four horizontal grid lines with their values.
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
    for v in [x0, x1] {
        let _ = write!(
            o,
            "<text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            sx(v),
            H - BOTTOM + 14.0,
            esc(&tick(v, false))
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
    for s in series {
        let path: Vec<String> = s
            .points
            .iter()
            .map(|p| format!("{:.1},{:.1}", sx(p.x), sy(p.y)))
            .collect();
        if path.len() > 1 {
            let _ = write!(
                o,
                "<polyline class=\"line {}\" fill=\"none\" points=\"{}\"/>",
                s.class,
                path.join(" ")
            );
        }
        for p in &s.points {
            let dot = format!(
                "<circle class=\"dot {}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\"><title>{}</title></circle>",
                s.class,
                sx(p.x),
                sy(p.y),
                esc(&format!("{}: {}", s.name, p.label))
            );
            match &p.href {
                Some(h) => {
                    let _ = write!(o, "<a class=\"point\" href=\"{}\">{dot}</a>", esc(h));
                }
                None => o.push_str(&dot),
            }
        }
    }
    o.push_str("</svg><ul class=\"legend\">");
    for s in series {
        let _ = write!(
            o,
            "<li><span class=\"swatch {}\"></span>{}</li>",
            s.class,
            esc(s.name)
        );
    }
    o.push_str("</ul></figure>");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_link_and_labels_are_escaped() {
        let s = Series {
            name: "held-out",
            class: "s0",
            points: vec![
                Point {
                    x: 0.0,
                    y: 0.2,
                    label: "<b>".into(),
                    href: Some("/#/campaigns/x".into()),
                },
                Point {
                    x: 1.0,
                    y: 0.6,
                    label: "ok".into(),
                    href: None,
                },
            ],
        };
        let axes = Axes {
            title: "t",
            x: "iteration",
            y: "success",
            y_range: Some((0.0, 1.0)),
            percent: true,
        };
        let svg = plot(&axes, &[s]);
        assert!(svg.contains("<a class=\"point\" href=\"/#/campaigns/x\">"));
        assert!(svg.contains("&lt;b&gt;") && !svg.contains("<b>"));
        assert!(svg.contains("<polyline"));
        assert_eq!(svg.matches("<circle").count(), 2);
    }

    #[test]
    fn nothing_to_plot_says_so() {
        let axes = Axes {
            title: "t",
            x: "x",
            y: "y",
            y_range: None,
            percent: false,
        };
        assert!(plot(&axes, &[]).contains("No points yet"));
    }
}
