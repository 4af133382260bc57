//! HTML building blocks of the server-rendered training pages: escaping (every string
//! from a run's config, a task or a policy goes through [`esc`]) and the page frame.

use crate::page::{self, Frame, Nav};
pub use crate::plot::esc;

/// A rate as a percentage, or a dash.
pub fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{:.1}%", v * 100.0))
}

/// The dashboard's link to a campaign (the single-page app's route).
pub fn campaign_href(id: uuid::Uuid) -> String {
    format!("/#/campaigns/{id}")
}

/// The dashboard's link to an episode's replay.
pub fn episode_href(id: uuid::Uuid) -> String {
    format!("/#/episodes/{id}")
}

/// A whole page: the dashboard's page frame ([`page::frame`], Training marked), `body` in
/// `<main>`. `events` is the SSE URL the page's script follows to refresh `<main>` (no
/// inline script: the CSP forbids it).
pub fn frame(title: &str, events: Option<&str>, body: &str) -> String {
    page::frame(
        &Frame {
            title: Some(title),
            active: Some(Nav::Training),
            styles: &["training.css"],
            scripts: &["training.js"],
        },
        &format!(
            "<main id=\"app\" class=\"app training\"{}>\n{body}\n</main>",
            events.map_or(String::new(), |e| format!(" data-events=\"{}\"", esc(e))),
        ),
    )
}
