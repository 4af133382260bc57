//! Bar charts over categories (histogram bins, difficulties): each bar may link to the
//! episodes it counts.

use std::fmt::Write;

use super::{Axes, BOTTOM, H, LEFT, RIGHT, TOP, W, empty, esc, linked, open, range};

/// One bar.
pub struct Bar {
    /// Its category, under the axis.
    pub label: String,
    /// Height.
    pub value: f64,
    /// Tooltip.
    pub tip: String,
    /// Where clicking it goes.
    pub href: Option<String>,
    /// CSS class giving its colour (`s0`, `s1`, …).
    pub class: &'static str,
}

/// Category labels shown under the axis at most (every n-th past this).
const MAX_LABELS: usize = 12;

/// The bar chart, or a note that there is nothing to plot yet. Bars rise from zero.
pub fn bars(axes: &Axes, bars: &[Bar]) -> String {
    if bars.is_empty() {
        return empty(axes);
    }
    let Some((_, top)) = axes
        .y_range
        .or_else(|| range(bars.iter().map(|b| b.value).chain([0.0])))
    else {
        return empty(axes);
    };
    let (y0, y1) = (0.0, if top > 0.0 { top } else { 1.0 });
    let sy = |y: f64| H - BOTTOM - (y - y0) / (y1 - y0) * (H - TOP - BOTTOM);
    let band = (W - LEFT - RIGHT) / bars.len() as f64;
    let every = bars.len().div_ceil(MAX_LABELS);
    let mut o = String::new();
    open(&mut o, axes, (y0, y1), sy);
    for (i, b) in bars.iter().enumerate() {
        let x = LEFT + band * i as f64;
        let value = if b.value.is_finite() {
            b.value.max(0.0)
        } else {
            0.0
        };
        let y = sy(value.min(y1));
        let rect = format!(
            "<rect class=\"bar {}\" x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\"><title>{}</title></rect>",
            b.class,
            x + band * 0.1,
            (band * 0.8).max(1.0),
            (H - BOTTOM - y).max(0.0),
            esc(&b.tip)
        );
        linked(&mut o, b.href.as_deref(), "bar-link", &rect);
        if i % every == 0 {
            let _ = write!(
                o,
                "<text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                x + band / 2.0,
                H - BOTTOM + 14.0,
                esc(&b.label)
            );
        }
    }
    o.push_str("</svg></figure>");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axes() -> Axes<'static> {
        Axes {
            title: "t",
            x: "x",
            y: "y",
            y_range: None,
            percent: false,
        }
    }

    #[test]
    fn bars_link_and_labels_are_escaped() {
        let b = |label: &str, value, href: Option<&str>| Bar {
            label: label.into(),
            value,
            tip: format!("{label} <i>"),
            href: href.map(Into::into),
            class: "s0",
        };
        let svg = bars(
            &axes(),
            &[b("<a>", 3.0, Some("/x?a=1&b=2")), b("b", 0.0, None)],
        );
        assert_eq!(svg.matches("<rect").count(), 2);
        assert_eq!(svg.matches("<a class=\"bar-link\"").count(), 1);
        assert!(svg.contains("href=\"/x?a=1&amp;b=2\""));
        assert!(svg.contains("&lt;a&gt;") && !svg.contains("<i>"));
    }

    #[test]
    fn nothing_to_plot_says_so() {
        assert!(bars(&axes(), &[]).contains("No points yet"));
    }
}
