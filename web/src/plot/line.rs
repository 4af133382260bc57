//! Line plots: one or more series of points over a numeric horizontal axis.

use std::fmt::Write;

use super::{Axes, BOTTOM, H, LEFT, RIGHT, TOP, W, empty, esc, linked, open, range, tick};

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

/// The plot, or a note that there is nothing to plot yet.
pub fn line(axes: &Axes, series: &[Series]) -> String {
    let all = || series.iter().flat_map(|s| s.points.iter());
    let (Some((x0, x1)), Some((y0, y1))) = (
        range(all().map(|p| p.x)),
        axes.y_range.or_else(|| range(all().map(|p| p.y))),
    ) else {
        return empty(axes);
    };
    let sx = |x: f64| LEFT + (x - x0) / (x1 - x0) * (W - LEFT - RIGHT);
    let sy = |y: f64| H - BOTTOM - (y - y0) / (y1 - y0) * (H - TOP - BOTTOM);
    let mut o = String::new();
    open(&mut o, axes, (y0, y1), sy);
    for v in [x0, x1] {
        let _ = write!(
            o,
            "<text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            sx(v),
            H - BOTTOM + 14.0,
            esc(&tick(v, false))
        );
    }
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
            linked(&mut o, p.href.as_deref(), "point", &dot);
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
        let svg = line(&axes, &[s]);
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
        assert!(line(&axes, &[]).contains("No points yet"));
    }
}
