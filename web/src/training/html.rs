//! HTML building blocks of the server-rendered training pages: escaping (every string
//! from a run's config, a task or a policy goes through [`esc`]) and the page frame.

use std::fmt::Write;

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

/// A whole page: the dashboard's top bar, `body` in `<main>`. `events` is the SSE URL the
/// page's script follows to refresh `<main>` (no inline script: the CSP forbids it).
pub fn frame(title: &str, events: Option<&str>, body: &str) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n<title>{} · surfgym</title>\n\
         <link rel=\"stylesheet\" href=\"/assets/style.css\">\n\
         <link rel=\"stylesheet\" href=\"/assets/training.css\">\n\
         <script src=\"/assets/training.js\" defer></script>\n</head>\n<body>\n\
         <header class=\"topbar\">\n  <a class=\"brand\" href=\"/#/\"><span class=\"brand-mark\" aria-hidden=\"true\"></span>surfgym</a>\n\
         <nav class=\"nav\" aria-label=\"Main\">\n    <a class=\"nav-link\" href=\"/#/\">Campaigns</a>\n\
         <a class=\"nav-link\" href=\"/#/tasks\">Tasks</a>\n\
         <a class=\"nav-link active\" href=\"/training-runs\">Training</a>\n  </nav>\n\
         <div class=\"topbar-right\"><span id=\"live\" class=\"live\" hidden><span class=\"live-dot\" aria-hidden=\"true\"></span>Live</span></div>\n\
         </header>\n<main id=\"app\" class=\"app training\"{}>\n{}\n</main>\n</body>\n</html>\n",
        esc(title),
        events.map_or(String::new(), |e| format!(" data-events=\"{}\"", esc(e))),
        body
    );
    o
}
