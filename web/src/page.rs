//! Pagination shared by the list endpoints, and the page frame shared by every page of
//! the dashboard.
//!
//! The frame is the document around a page's body: the head (stylesheets, scripts) and the
//! top bar (brand, the links every page shows, the live indicator and the sign-in slot).
//! [`frame`] is its one definition: the server-rendered pages (training, analysis,
//! compare) and the static shells (`/`, `/signin`, whose bodies are
//! `dashboard/index.html` and `dashboard/signin.html`) all go through it, and every page
//! loads `frame.js`, which fills the sign-in slot and the tasks count the same way
//! everywhere. No inline script or style anywhere: the CSP forbids them.

use axum::http::header;
use axum::response::IntoResponse;
use serde::{Deserialize, Serialize};

use crate::error::{ApiError, field};
use crate::plot::esc;

/// The most items one page may hold.
pub const MAX_LIMIT: i64 = 500;

/// `limit` and `offset` as given: the whole query of a list without filters; lists with
/// filters declare these two among their own parameters (a query struct that denies
/// unknown parameters cannot share them by flattening).
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    /// Items per page (default 50).
    pub limit: Option<i64>,
    /// Items to skip.
    pub offset: Option<i64>,
}

impl PageQuery {
    /// Checked (limit, offset).
    pub fn checked(self) -> Result<(i64, i64), ApiError> {
        let limit = self.limit.unwrap_or(50);
        let offset = self.offset.unwrap_or(0);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(field("limit", format!("must be between 1 and {MAX_LIMIT}")));
        }
        if offset < 0 {
            return Err(field("offset", "must not be negative"));
        }
        Ok((limit, offset))
    }
}

/// A page of items.
#[derive(Debug, Serialize)]
pub struct Page<T> {
    /// The items.
    pub items: Vec<T>,
    /// Items matching in all.
    pub total: i64,
    /// Page size.
    pub limit: i64,
    /// Items skipped.
    pub offset: i64,
}

/// A link of the top bar that a page can mark as its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nav {
    /// The campaign list (and a campaign's analysis pages).
    Campaigns,
    /// The task catalogue.
    Tasks,
    /// Failure triage.
    Triage,
    /// The training pages.
    Training,
    /// Two campaigns or two rollouts side by side.
    Compare,
}

/// The top bar's links in their order: which, element id, href, label. The tasks link
/// carries the count pill (filled by `frame.js`); the API docs open in a new tab.
const NAV: &[(Option<Nav>, &str, &str, &str)] = &[
    (Some(Nav::Campaigns), "nav-campaigns", "/#/", "Campaigns"),
    (
        Some(Nav::Tasks),
        "nav-tasks",
        "/#/tasks",
        "Tasks <span id=\"tasks-count\" class=\"count-pill\">…</span>",
    ),
    (Some(Nav::Triage), "nav-triage", "/#/triage", "Triage"),
    (
        Some(Nav::Training),
        "nav-training",
        "/training-runs",
        "Training",
    ),
    (Some(Nav::Compare), "nav-compare", "/compare", "Compare"),
    (None, "nav-api", "/api/openapi.json", "API docs"),
];

/// The top bar, `active` marked: the brand, [`NAV`], the live indicator (scripts show it
/// while a stream is open) and the sign-in slot `#session` (`frame.js` fills it).
pub fn top_bar(active: Option<Nav>) -> String {
    let mut o = String::from(
        "<header class=\"topbar\">\n  <a class=\"brand\" href=\"/#/\"><span class=\"brand-mark\" \
         aria-hidden=\"true\"></span>surfgym</a>\n  <nav class=\"nav\" aria-label=\"Main\">\n",
    );
    for (nav, id, href, label) in NAV {
        let class = if active.is_some() && *nav == active {
            "nav-link active"
        } else {
            "nav-link"
        };
        let new_tab = if nav.is_none() {
            " target=\"_blank\" rel=\"noopener noreferrer\""
        } else {
            ""
        };
        o.push_str(&format!(
            "    <a id=\"{id}\" class=\"{class}\" href=\"{href}\"{new_tab}>{label}</a>\n"
        ));
    }
    o.push_str(
        "  </nav>\n  <div class=\"topbar-right\">\n    <span id=\"live\" class=\"live\" hidden>\
         <span class=\"live-dot\" aria-hidden=\"true\"></span>Live</span>\n    \
         <span id=\"session\" class=\"session\"></span>\n  </div>\n</header>\n",
    );
    o
}

/// What a page puts into the frame besides its body.
#[derive(Debug, Clone, Copy, Default)]
pub struct Frame<'a> {
    /// The page's title, shown as "{title} · surfgym" (escaped); `None`: "surfgym".
    pub title: Option<&'a str>,
    /// The top bar's link marked as the current one.
    pub active: Option<Nav>,
    /// Stylesheets under `/assets/`, after `style.css`.
    pub styles: &'a [&'a str],
    /// Scripts under `/assets/`, deferred, after `frame.js`.
    pub scripts: &'a [&'a str],
}

/// A whole page: the head, the [`top_bar`], then `body` (the page's `<main>` and what
/// follows it) as it is: whoever built `body` has escaped what it holds.
pub fn frame(f: &Frame, body: &str) -> String {
    let title = match f.title {
        Some(t) => format!("{} · surfgym", esc(t)),
        None => "surfgym".into(),
    };
    let mut o = format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n<title>{title}</title>\n\
         <link rel=\"stylesheet\" href=\"/assets/style.css\">\n"
    );
    for s in f.styles {
        o.push_str(&format!(
            "<link rel=\"stylesheet\" href=\"/assets/{}\">\n",
            esc(s)
        ));
    }
    for s in std::iter::once(&"frame.js").chain(f.scripts) {
        o.push_str(&format!(
            "<script src=\"/assets/{}\" defer></script>\n",
            esc(s)
        ));
    }
    o.push_str("</head>\n<body>\n");
    o.push_str(&top_bar(f.active));
    o.push_str(body.trim_end());
    o.push_str("\n</body>\n</html>\n");
    o
}

const FRAME_JS: &str = include_str!("../dashboard/frame.js");

/// `GET /assets/frame.js`: the frame's script, which every page loads.
pub async fn script() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        FRAME_JS,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind of page the dashboard serves: name, the page, the link it marks.
    fn pages() -> Vec<(&'static str, String, Option<Nav>)> {
        vec![
            (
                "index (/)",
                crate::dashboard::index_html().to_string(),
                None,
            ),
            (
                "sign-in (/signin)",
                crate::session::page_html().to_string(),
                None,
            ),
            (
                "training",
                crate::training::html::frame(
                    "Training runs",
                    Some("/api/training-runs/1/events"),
                    "<p>runs</p>",
                ),
                Some(Nav::Training),
            ),
            (
                "analysis",
                crate::analysis::html::frame("c · tasks", "<p>tasks</p>"),
                Some(Nav::Campaigns),
            ),
            (
                "compare",
                crate::analysis::html::compare_frame("Compare", "<p>compare</p>"),
                Some(Nav::Compare),
            ),
        ]
    }

    fn header(page: &str) -> &str {
        let start = page.find("<header").expect("a top bar");
        let end = page[start..]
            .find("</header>\n")
            .expect("the top bar's end")
            + start;
        &page[start..end + "</header>\n".len()]
    }

    /// The values of `attr="…"` in `html`, in order.
    fn attrs<'a>(html: &'a str, attr: &str) -> Vec<&'a str> {
        let pat = format!(" {attr}=\"");
        html.split(pat.as_str())
            .skip(1)
            .filter_map(|s| s.split('"').next())
            .collect()
    }

    #[test]
    fn the_top_bar_has_every_link_in_order_and_the_sign_in_slot() {
        let bar = top_bar(None);
        let nav = &bar[bar.find("<nav").unwrap()..bar.find("</nav>").unwrap()];
        assert_eq!(
            attrs(nav, "id"),
            [
                "nav-campaigns",
                "nav-tasks",
                "tasks-count",
                "nav-triage",
                "nav-training",
                "nav-compare",
                "nav-api"
            ]
        );
        assert_eq!(
            attrs(nav, "href"),
            [
                "/#/",
                "/#/tasks",
                "/#/triage",
                "/training-runs",
                "/compare",
                "/api/openapi.json"
            ]
        );
        assert!(bar.contains("<a class=\"brand\" href=\"/#/\">"));
        assert!(bar.contains("<span id=\"session\" class=\"session\"></span>"));
        assert!(bar.contains("<span id=\"live\" class=\"live\" hidden>"));
        assert!(!bar.contains("active"));
        for which in [
            Nav::Campaigns,
            Nav::Tasks,
            Nav::Triage,
            Nav::Training,
            Nav::Compare,
        ] {
            let marked = top_bar(Some(which));
            assert_eq!(marked.matches("nav-link active").count(), 1, "{which:?}");
            assert_eq!(marked.replace("nav-link active", "nav-link"), bar);
        }
    }

    /// Each server-rendered page kind and each static shell carries the one frame: the
    /// same top bar (only the marked link differs), once, and the frame's script.
    #[test]
    fn every_page_carries_the_one_frame() {
        for (name, page, active) in pages() {
            assert!(
                page.starts_with("<!doctype html>\n<html lang=\"en\">\n<head>\n"),
                "{name}"
            );
            assert!(page.ends_with("</body>\n</html>\n"), "{name}");
            assert_eq!(page.matches("<header").count(), 1, "{name}");
            assert_eq!(header(&page), top_bar(active), "{name}");
            let head = &page[..page.find("</head>").unwrap()];
            assert!(
                head.contains("<link rel=\"stylesheet\" href=\"/assets/style.css\">\n"),
                "{name}"
            );
            assert!(
                head.contains("<script src=\"/assets/frame.js\" defer></script>\n"),
                "{name}"
            );
            assert_eq!(page.matches("id=\"session\"").count(), 1, "{name}");
            // Ids are unique (frame.js adds #signed-in, #signout, #signin-link).
            let ids = attrs(&page, "id");
            for id in &ids {
                assert_eq!(ids.iter().filter(|i| *i == id).count(), 1, "{name}: #{id}");
            }
            for added in ["signed-in", "signout", "signin-link", "signed-out"] {
                assert!(!ids.contains(&added), "{name}: #{added}");
            }
        }
        // The static bodies hold no frame of their own.
        for body in [
            include_str!("../dashboard/index.html"),
            include_str!("../dashboard/signin.html"),
        ] {
            for tag in ["<html", "<head", "<header", "<title", "class=\"topbar"] {
                assert!(!body.contains(tag), "{tag}");
            }
        }
        assert!(crate::session::page_html().contains("<title>Sign in · surfgym</title>"));
        assert!(crate::dashboard::index_html().contains("<title>surfgym</title>"));
    }

    /// The sign-in state is filled by frame.js alone, not by each view.
    #[test]
    fn only_the_frame_script_fills_the_sign_in_slot() {
        assert!(FRAME_JS.contains("getElementById('session')"));
        assert!(!FRAME_JS.contains("innerHTML"));
        for (name, js) in [
            ("app.js", include_str!("../dashboard/app.js")),
            ("signin.js", include_str!("../dashboard/signin.js")),
            ("training.js", include_str!("../dashboard/training.js")),
            ("triage.js", include_str!("../dashboard/triage.js")),
            ("replay.js", include_str!("../dashboard/replay.js")),
            ("live.js", include_str!("../dashboard/live.js")),
            ("keys.js", include_str!("../dashboard/keys.js")),
        ] {
            for own in ["'session'", "signed-in", "'signout'", "signin-link"] {
                assert!(!js.contains(own), "{name} fills the sign-in slot ({own})");
            }
        }
    }

    /// The CSP allows no inline script or style: none in any page.
    #[test]
    fn no_page_has_inline_script_or_style() {
        for (name, page, _) in pages() {
            for script in page.split("<script").skip(1) {
                assert!(
                    script.starts_with(" src=\"/assets/"),
                    "{name}: <script{script}"
                );
                assert!(
                    script.split_once('>').unwrap().1.starts_with("</script>"),
                    "{name}"
                );
            }
            for inline in [
                "<style",
                " style=",
                " onclick=",
                " onload=",
                " onerror=",
                "javascript:",
            ] {
                assert!(!page.contains(inline), "{name}: {inline}");
            }
        }
    }

    /// A page's title (from a run, a campaign or a task: hostile text) is escaped in the
    /// frame, and so is a training page's event URL.
    #[test]
    fn page_text_in_the_frame_is_escaped() {
        let evil = "</title><script>alert(1)</script>\"'&";
        let escaped = "&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;";
        let pages = [
            frame(
                &Frame {
                    title: Some(evil),
                    ..Default::default()
                },
                "",
            ),
            crate::training::html::frame(evil, Some(evil), ""),
            crate::analysis::html::frame(evil, ""),
            crate::analysis::html::compare_frame(evil, ""),
        ];
        for page in pages {
            assert!(!page.contains("<script>"), "{page}");
            assert!(!page.contains("</title><script"), "{page}");
            assert!(
                page.contains(&format!("<title>{escaped} · surfgym</title>")),
                "{page}"
            );
            assert_eq!(page.matches("</title>").count(), 1);
        }
        let training = crate::training::html::frame("t", Some(evil), "");
        assert!(training.contains(&format!(" data-events=\"{escaped}\">")));
    }
}
