//! HTML building blocks of the analysis pages: the page frame, the campaign's tabs,
//! formatting, and sortable column headers. Every string from a page, a task, a model or
//! a request goes through [`esc`].

use std::fmt::Write;

use store::CampaignView;

use crate::page::{self, Frame, Nav};
pub use crate::plot::esc;

/// A campaign's analysis page: the dashboard's page frame ([`page::frame`], Campaigns
/// marked) and `body` in `<main>`. No script of its own: filters, search, sorting and
/// paging are links and GET forms.
pub fn frame(title: &str, body: &str) -> String {
    frame_at(Nav::Campaigns, title, body)
}

/// A comparison page: as [`frame`], Compare marked.
pub fn compare_frame(title: &str, body: &str) -> String {
    frame_at(Nav::Compare, title, body)
}

fn frame_at(active: Nav, title: &str, body: &str) -> String {
    page::frame(
        &Frame {
            title: Some(title),
            active: Some(active),
            styles: &["training.css", "analysis.css"],
            scripts: &[],
        },
        &format!("<main id=\"app\" class=\"app training analysis\">\n{body}\n</main>"),
    )
}

/// The campaign's name, a link back to it, and its analysis views as tabs.
pub fn head(c: &CampaignView, current: &str) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "<p class=\"crumbs\"><a href=\"/#/campaigns/{id}\">Campaign</a></p>\
         <h1 id=\"campaign-name\">{}</h1><p class=\"meta\">policy <code id=\"campaign-policy\">{}</code> · \
         {} · {} episodes</p><nav class=\"tabs\" aria-label=\"Views\">",
        esc(&c.name),
        esc(&c.policy),
        c.status.as_str(),
        c.total_episodes,
        id = c.id
    );
    for (path, label) in [
        ("analysis", "Tasks"),
        ("episodes", "Episodes"),
        ("plots", "Plots"),
    ] {
        let _ = write!(
            o,
            "<a class=\"tab{}\" id=\"tab-{path}\" href=\"/campaigns/{}/{path}\">{label}</a>",
            if path == current { " active" } else { "" },
            c.id
        );
    }
    let _ = write!(
        o,
        "<a class=\"tab\" id=\"tab-compare\" href=\"/compare?a={}\">Compare…</a></nav>",
        c.id
    );
    o
}

/// A rate as a percentage, or a dash.
pub fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{:.1}%", v * 100.0))
}

/// A number with `digits` decimals, or a dash.
pub fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{v:.digits$}"))
}

/// A text or a dash, escaped.
pub fn opt(v: Option<&str>) -> String {
    v.map_or_else(|| "–".into(), esc)
}

/// A column header that orders the table by `key` (again: the other way), marking the
/// current order. `href` makes the link from (key, order).
pub fn sort_th(
    label: &str,
    key: &str,
    current: &str,
    descending: bool,
    href: &dyn Fn(&str, &str) -> String,
) -> String {
    let active = key == current;
    let next = if active && !descending { "desc" } else { "asc" };
    let mark = match (active, descending) {
        (false, _) => "",
        (true, false) => " ▲",
        (true, true) => " ▼",
    };
    let aria = match (active, descending) {
        (false, _) => "none",
        (true, false) => "ascending",
        (true, true) => "descending",
    };
    format!(
        "<th aria-sort=\"{aria}\"><a class=\"sort\" data-sort=\"{key}\" href=\"{}\">{}{mark}</a></th>",
        esc(&href(key, next)),
        esc(label)
    )
}
