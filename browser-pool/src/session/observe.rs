//! Observations of the active tab (elements, screenshot, set-of-marks, accessibility
//! tree, tabs, page events) and the page reads a runner makes outside them (a selector's
//! element, the page's text, its URL).

use std::collections::HashMap;

use chromiumoxide::cdp::browser_protocol::accessibility::GetFullAxTreeParams;
use chromiumoxide::cdp::browser_protocol::dom::DescribeNodeParams;
use chromiumoxide::cdp::browser_protocol::page::{
    CaptureScreenshotFormat, CaptureScreenshotParams, Viewport,
};
use chromiumoxide::cdp::js_protocol::runtime::{
    EvaluateParams, ExecutionContextId, GetPropertiesParams, ReleaseObjectGroupParams,
};
use serde::Deserialize;
use serde_json::Value;

use super::tab::Life;
use super::{ElementState, Session, frames};
use crate::config::ImageFormat;
use crate::error::PoolError;
use crate::events::PageEvent;
use crate::js;
use crate::observation::{Element, Observation, PageSignals, Screenshot, ScrollState, TabInfo};

#[derive(Deserialize)]
struct ObservedPage {
    url: String,
    title: String,
    scroll: ScrollState,
    elements: Vec<Element>,
    /// Cross-origin iframes the scan could not enter (see `session/frames.rs`).
    #[serde(default)]
    holes: Vec<frames::Hole>,
    /// Null in a cross-origin frame's scan.
    #[serde(default)]
    signals: Option<PageSignals>,
}

impl Session {
    /// Reads the first element matching `css`, or `None` when nothing matches: in the top
    /// document, its open shadow roots and same-origin frames, else in the cross-origin
    /// frames the last observation scanned.
    pub async fn query_selector(
        &self,
        css: &str,
    ) -> Result<Result<Option<ElementState>, String>, PoolError> {
        let mut found = self.eval_ours(&js::query(css)).await?;
        if let Ok(Value::Null) = found
            && let Some((_, v)) = self.query_frames(css).await?
        {
            found = Ok(v);
        }
        Ok(match found {
            Ok(Value::Null) => Ok(None),
            Ok(v) => serde_json::from_value(v)
                .map(Some)
                .map_err(|e| e.to_string()),
            Err(e) => Err(format!("invalid selector {css:?}: {e}")),
        })
    }

    /// The visible text of the page body.
    pub async fn page_text(&self) -> Result<String, PoolError> {
        let v = self
            .eval_ours("document.body ? document.body.innerText : ''")
            .await?
            .unwrap_or(Value::Null);
        Ok(v.as_str().unwrap_or_default().to_string())
    }

    /// The current URL.
    pub async fn url(&self) -> Result<String, PoolError> {
        let v = self
            .eval_ours("location.href")
            .await?
            .unwrap_or(Value::Null);
        Ok(v.as_str().unwrap_or_default().to_string())
    }

    /// Numbers and describes the page's interactive elements, without a screenshot or
    /// settling: the element half of an observation in one evaluation (benchmarks use it
    /// as a floor). Cross-origin frames are not entered: `observe` lists theirs.
    pub async fn scan_elements(&self) -> Result<Vec<Element>, PoolError> {
        Ok(self.scan().await?.elements)
    }

    async fn scan(&self) -> Result<ObservedPage, PoolError> {
        let raw = match self.eval_ours(js::observe()).await? {
            Ok(v) => v,
            Err(e) => {
                return Err(PoolError::Cdp {
                    op: "observe",
                    message: e,
                });
            }
        };
        serde_json::from_value(raw).map_err(|e| PoolError::Cdp {
            op: "observe",
            message: format!("unexpected observation shape: {e}"),
        })
    }

    /// Takes an observation of the active tab, after taking in tabs the page opened or
    /// closed and closing any tab whose URL the policy forbids.
    pub async fn observe(&mut self) -> Result<Observation, PoolError> {
        self.absorb_tabs().await?;
        let mut page = match self.scan().await {
            // The tab closed itself just now; observe the one that takes its place.
            Err(_) if self.tab().life() == Life::Closed => {
                self.absorb_tabs().await?;
                self.scan().await?
            }
            other => other?,
        };
        if self.enforce_url_policy(&page.url).await? {
            page = self.scan().await?;
        }
        page.title = clip_title(&page.title);
        let holes = std::mem::take(&mut page.holes);
        let (elements, numbering) = self
            .with_frames(std::mem::take(&mut page.elements), holes)
            .await?;
        page.elements = elements;
        self.tabs[self.active].numbering = numbering;
        let screenshot = self.screenshot().await?;
        let marked = if self.cfg.set_of_marks {
            Some(
                crate::marks::overlay(&screenshot, &page.elements, self.cfg.jpeg_quality).map_err(
                    |message| PoolError::Cdp {
                        op: "set-of-marks",
                        message,
                    },
                )?,
            )
        } else {
            None
        };
        let ax_tree = if self.cfg.accessibility_tree {
            Some(self.accessibility_tree().await?)
        } else {
            None
        };
        let tabs = self.tab_list(&page.url, &page.title).await?;
        let mut events = self.events.take();
        fill_opened_urls(&mut events, &tabs);
        Ok(Observation {
            url: page.url,
            title: page.title,
            screenshot,
            elements: page.elements,
            scroll: page.scroll,
            last_action_error: self.last_error.take(),
            marked,
            ax_tree,
            tabs,
            events,
            signals: page.signals.unwrap_or_default(),
        })
    }

    /// The page events noted since the last observation, for a caller that will not
    /// observe again (the end of an episode): tabs opened since are taken in first, and
    /// their URLs are the ones they loaded, as in an observation.
    pub async fn take_events(&mut self) -> Result<Vec<PageEvent>, PoolError> {
        self.absorb_tabs().await?;
        let mut events = self.events.take();
        if events
            .iter()
            .any(|e| matches!(e, PageEvent::TabOpened { url, .. } if opened_blank(url)))
        {
            let url = self.url().await?;
            let tabs = self.tab_list(&url, "").await?;
            fill_opened_urls(&mut events, &tabs);
        }
        Ok(events)
    }

    /// The accessibility tree of the active tab as indented text, the nodes of the last
    /// observation's numbered elements marked `[N]` (an agent reading the tree acts on
    /// them by number, as on the element list).
    pub async fn accessibility_tree(&self) -> Result<String, PoolError> {
        let numbers = self.numbered_nodes().await?;
        let nodes = self
            .read_page(
                "Accessibility.getFullAXTree",
                GetFullAxTreeParams::default(),
            )
            .await?
            .nodes;
        let frames = self.frame_trees(&nodes, &numbers, 1).await?;
        Ok(crate::ax_tree::render(&nodes, &numbers, &frames))
    }

    /// The rendered trees of the iframes among `nodes` (the top document's tree shows an
    /// iframe as a leaf), nested ones too up to [`AX_FRAME_DEPTH`], by the iframe element's
    /// backend node id. Out-of-process frames (a remote browser's cross-site ones) have no
    /// tree in this page's session and stay leaves.
    async fn frame_trees(
        &self,
        nodes: &[chromiumoxide::cdp::browser_protocol::accessibility::AxNode],
        numbers: &HashMap<i64, usize>,
        depth: usize,
    ) -> Result<HashMap<i64, String>, PoolError> {
        let mut out = HashMap::new();
        if depth > AX_FRAME_DEPTH {
            return Ok(out);
        }
        let iframes = nodes.iter().filter_map(|n| {
            let role = n.role.as_ref()?.value.as_ref()?.as_str()?;
            (role == "Iframe").then_some(n.backend_dom_node_id?)
        });
        for backend in iframes.take(AX_MAX_FRAMES) {
            let describe = DescribeNodeParams {
                backend_node_id: Some(backend),
                ..Default::default()
            };
            let frame_id = match self.call("DOM.describeNode", describe).await {
                Ok(r) => r.node.frame_id,
                Err(PoolError::Cdp { .. }) => None,
                Err(e) => return Err(e),
            };
            let Some(frame_id) = frame_id else { continue };
            let params = GetFullAxTreeParams {
                frame_id: Some(frame_id),
                ..Default::default()
            };
            let sub = match self.call("Accessibility.getFullAXTree", params).await {
                Ok(r) => r.nodes,
                Err(PoolError::Cdp { .. }) => continue,
                Err(e) => return Err(e),
            };
            let inner = Box::pin(self.frame_trees(&sub, numbers, depth + 1)).await?;
            out.insert(
                *backend.inner(),
                crate::ax_tree::render(&sub, numbers, &inner),
            );
        }
        Ok(out)
    }

    /// Element numbers by DOM node (backend node id), from the elements `observe.js` keeps
    /// in the page and in the isolated worlds of cross-origin frames. Elements gone from
    /// their documents since are left out, and a page that navigated meanwhile has none
    /// (its tree is of a document no number points into).
    async fn numbered_nodes(&self) -> Result<HashMap<i64, usize>, PoolError> {
        let mut out = self.numbered_in(None).await?;
        let frames: Vec<_> = self.tab().numbering.contexts().collect();
        for (frame, context) in frames {
            out.extend(self.numbered_in(Some((frame, context))).await?);
        }
        Ok(out)
    }

    /// [`Session::numbered_nodes`] of one document: the top one, or a frame's world.
    async fn numbered_in(
        &self,
        frame: Option<(usize, ExecutionContextId)>,
    ) -> Result<HashMap<i64, usize>, PoolError> {
        const GROUP: &str = "surfgym-numbered";
        let mut params = EvaluateParams::new("window[Symbol.for('surfgym.elements')] || []");
        params.object_group = Some(GROUP.into());
        let evaluated = self.eval_object(params, frame.map(|(_, c)| c)).await?;
        let numbering = &self.tab().numbering;
        let array = evaluated.and_then(|ret| ret.result.object_id);
        let Some(array) = array else {
            return Ok(HashMap::new());
        };
        let mut props = GetPropertiesParams::new(array);
        props.own_properties = Some(true);
        let props = self.call("Runtime.getProperties", props).await;
        let elements: Vec<(usize, _)> = props
            .as_ref()
            .map(|p| p.result.as_slice())
            .unwrap_or_default()
            .iter()
            .filter_map(|p| {
                let index: u32 = p.name.parse().ok()?;
                let n = numbering.global(frame.map(|(f, _)| f), index + 1)?;
                Some((n, p.value.as_ref()?.object_id.clone()?))
            })
            .collect();
        // One round trip for all: the describes are sent together.
        let described = futures::future::join_all(elements.into_iter().map(|(n, id)| async move {
            let params = DescribeNodeParams {
                object_id: Some(id),
                ..Default::default()
            };
            let node = self.call("DOM.describeNode", params).await.ok()?;
            Some((*node.node.backend_node_id.inner(), n))
        }))
        .await;
        let _ = self
            .call(
                "Runtime.releaseObjectGroup",
                ReleaseObjectGroupParams::new(GROUP),
            )
            .await;
        match props {
            Ok(_) | Err(PoolError::Cdp { .. }) => Ok(described.into_iter().flatten().collect()),
            Err(e) => Err(e),
        }
    }

    /// Captures the viewport in the configured format, size and scale.
    pub async fn screenshot(&self) -> Result<Screenshot, PoolError> {
        let cfg = &self.cfg;
        let (format, quality) = match cfg.screenshot_format {
            ImageFormat::Jpeg => (
                CaptureScreenshotFormat::Jpeg,
                Some(i64::from(cfg.jpeg_quality)),
            ),
            ImageFormat::Png => (CaptureScreenshotFormat::Png, None),
        };
        let scaled = (cfg.screenshot_scale - 1.0).abs() > f64::EPSILON;
        let clip = scaled.then(|| Viewport {
            x: 0.0,
            y: 0.0,
            width: f64::from(cfg.viewport_width),
            height: f64::from(cfg.viewport_height),
            scale: cfg.screenshot_scale,
        });
        let params = CaptureScreenshotParams {
            format: Some(format),
            quality,
            clip,
            ..Default::default()
        };
        let ret = self.read_page("Page.captureScreenshot", params).await?;
        let b64: &str = ret.data.as_ref();
        use base64::Engine;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| PoolError::Cdp {
                op: "Page.captureScreenshot",
                message: format!("bad base64: {e}"),
            })?;
        let scale = cfg.device_scale_factor * cfg.screenshot_scale;
        Ok(Screenshot {
            bytes,
            mime: cfg.screenshot_format.mime(),
            width: (f64::from(cfg.viewport_width) * scale).round() as u32,
            height: (f64::from(cfg.viewport_height) * scale).round() as u32,
            scale,
        })
    }
}

/// Iframes nested deeper than this keep their trees out of the accessibility text.
const AX_FRAME_DEPTH: usize = 3;

/// Iframes per document whose trees are read (ad-heavy pages have dozens).
const AX_MAX_FRAMES: usize = 10;

/// Longest page title an observation reports, in characters: a page must not make every
/// stored step and prompt huge through its title.
const TITLE_CHARS: usize = 300;

/// `title`, cut to [`TITLE_CHARS`] (the last one an ellipsis) when longer.
pub(super) fn clip_title(title: &str) -> String {
    // `end`: where the last character allowed starts; it gives way to the ellipsis when
    // more follow.
    match title.char_indices().nth(TITLE_CHARS - 1) {
        Some((end, _)) if title[end..].chars().nth(1).is_some() => format!("{}…", &title[..end]),
        _ => title.to_string(),
    }
}

/// Whether a tab-opened event names no page yet: `window.open(url)` creates its tab blank
/// and only then navigates, so the browser announces the tab without the URL.
fn opened_blank(url: &str) -> bool {
    url.is_empty() || url == "about:blank"
}

/// Gives each tab-opened event that names no page the URL its tab shows now (`tab` is
/// its 1-based number, as in `tabs`); a popup that really stayed blank keeps its URL.
fn fill_opened_urls(events: &mut [PageEvent], tabs: &[TabInfo]) {
    for e in events {
        if let PageEvent::TabOpened { tab, url } = e
            && opened_blank(url)
            && let Some(now) = tabs.get((*tab as usize).wrapping_sub(1))
            && !now.url.is_empty()
        {
            *url = now.url.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{TITLE_CHARS, clip_title};

    #[test]
    fn titles_are_cut_only_past_the_limit_and_by_characters() {
        let exact = "é".repeat(TITLE_CHARS);
        assert_eq!(clip_title(&exact), exact);
        let long = clip_title(&"é".repeat(TITLE_CHARS + 1));
        assert_eq!(long.chars().count(), TITLE_CHARS);
        assert!(long.ends_with("é…"));
        assert_eq!(clip_title("short"), "short");
    }
}
