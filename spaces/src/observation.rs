//! What a policy sees after each step.

use serde::{Deserialize, Serialize};

use crate::events::PageEvent;

/// A rectangle in viewport CSS pixels.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Rect {
    /// Left edge.
    pub x: f64,
    /// Top edge.
    pub y: f64,
    /// Width.
    pub width: f64,
    /// Height.
    pub height: f64,
}

impl Rect {
    /// The centre point.
    pub fn center(&self) -> (f64, f64) {
        (self.x + self.width / 2.0, self.y + self.height / 2.0)
    }
}

/// One interactive element, numbered for the policy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Element {
    /// The number actions refer to (`click(12)`); valid until the next observation.
    pub id: u32,
    /// Lower-case tag name.
    pub tag: String,
    /// ARIA role, explicit or implied by the tag.
    pub role: String,
    /// Accessible label: aria-label, associated `<label>`, text, placeholder, title or alt.
    pub label: String,
    /// Current value of inputs, textareas and selects (the selected option's text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Placeholder text of an empty input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placeholder: Option<String>,
    /// Checkbox / radio state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked: Option<bool>,
    /// Whether the element is disabled.
    #[serde(default)]
    pub disabled: bool,
    /// Option texts of a `<select>` (at most 25).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    /// Link target, for anchors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub href: Option<String>,
    /// Input type, for inputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_type: Option<String>,
    /// Bounding box in the viewport at observation time.
    pub bbox: Rect,
    /// Whether any part of the box is inside the viewport.
    pub in_viewport: bool,
}

/// An encoded screenshot.
#[derive(Debug, Clone, PartialEq)]
pub struct Screenshot {
    /// Encoded image bytes.
    pub bytes: Vec<u8>,
    /// MIME type (`image/jpeg` or `image/png`).
    pub mime: &'static str,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Image pixels per CSS pixel (device scale factor times screenshot scale). Element
    /// boxes and action coordinates are in CSS pixels; multiply by this to find them here.
    pub scale: f64,
}

impl Screenshot {
    /// The viewport it shows, in CSS pixels (the frame of element boxes and action
    /// coordinates); `None` for an empty screenshot.
    pub fn viewport(&self) -> Option<(u32, u32)> {
        (self.width > 0 && self.height > 0 && self.scale > 0.0).then(|| {
            let css = |px: u32| (f64::from(px) / self.scale).round() as u32;
            (css(self.width), css(self.height))
        })
    }
}

impl Default for Screenshot {
    fn default() -> Self {
        Screenshot {
            bytes: Vec::new(),
            mime: "image/jpeg",
            width: 0,
            height: 0,
            scale: 1.0,
        }
    }
}

/// One open tab of the session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TabInfo {
    /// The number `switch_tab(n)` and `close_tab(n)` take, from 1.
    pub number: u32,
    /// Current URL.
    pub url: String,
    /// Document title.
    pub title: String,
    /// Whether this is the tab being observed and acted on.
    pub active: bool,
}

/// Scroll state of the page.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ScrollState {
    /// Horizontal scroll offset.
    pub x: f64,
    /// Vertical scroll offset.
    pub y: f64,
    /// Full document height.
    pub page_height: f64,
    /// Viewport height.
    pub viewport_height: f64,
}

/// What the page shows of a site turning the agent away, read with every observation of
/// the top document (`engine`'s block rules judge them): cheap to read, and the text only
/// of a short page, since an interstitial is short and a long page's text costs a layout.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageSignals {
    /// The HTTP status of the top document's response, where the browser reports one.
    #[serde(default)]
    pub status: Option<u16>,
    /// A CAPTCHA widget is on the page (reCAPTCHA, hCaptcha, Turnstile).
    #[serde(default)]
    pub captcha: bool,
    /// Password fields on the page.
    #[serde(default)]
    pub password_fields: u32,
    /// The page's visible text, when its body is short (at most [`PageSignals::SHORT`]
    /// characters of text content); clipped to that many characters.
    #[serde(default)]
    pub short_text: Option<String>,
}

impl PageSignals {
    /// Pages with more text than this are never read whole for the block rules.
    pub const SHORT: usize = 4000;
}

/// A snapshot of the page after a step.
#[derive(Debug, Clone, Default)]
pub struct Observation {
    /// Current URL.
    pub url: String,
    /// Document title.
    pub title: String,
    /// The viewport as an image.
    pub screenshot: Screenshot,
    /// Interactive elements in document order, numbered from 1.
    pub elements: Vec<Element>,
    /// Scroll position.
    pub scroll: ScrollState,
    /// The error of the previous action, if it failed.
    pub last_action_error: Option<String>,
    /// The screenshot with numbered element boxes drawn on it (set-of-marks), when the
    /// pool is configured to draw them; `screenshot` stays clean for replays.
    pub marked: Option<Screenshot>,
    /// The accessibility tree as indented text, when the pool is configured to read it.
    pub ax_tree: Option<String>,
    /// Open tabs, in opening order; exactly one is active.
    pub tabs: Vec<TabInfo>,
    /// What the page did on its own since the last observation: dialogs, popups,
    /// downloads, blocked navigations, stopped scripts.
    pub events: Vec<PageEvent>,
    /// What the page shows of a site turning the agent away (status, CAPTCHA, walls).
    pub signals: PageSignals,
}

impl Observation {
    /// The numbered element list as text, the way a prompt shows it:
    /// `[12] button "Add to cart"`.
    /// The open tabs as one line, the way a prompt shows them (`[1] "Shop" (active) [2]
    /// "Help"`), or `None` with a single tab.
    pub fn tabs_line(&self) -> Option<String> {
        (self.tabs.len() > 1).then(|| {
            self.tabs
                .iter()
                .map(|t| {
                    let active = if t.active { " (active)" } else { "" };
                    format!("[{}] {:?}{active}", t.number, t.title)
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
    }

    /// Elements outside the viewport are left out (an agent scrolls to see them).
    pub fn element_lines(&self) -> Vec<String> {
        self.element_lines_as(ElementFormat::NumberFirst)
    }

    /// [`Observation::element_lines`] written in `format`.
    pub fn element_lines_as(&self, format: ElementFormat) -> Vec<String> {
        self.elements
            .iter()
            .filter(|e| e.in_viewport)
            .map(|e| e.line_as(format))
            .collect()
    }
}

/// Where a prompt's element line puts the element's number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ElementFormat {
    /// `[12] button "Add to cart"` (BrowserGym's accessibility-tree lines).
    #[default]
    NumberFirst,
    /// `button "Add to cart" [12]`: the number after what names the element. A causal
    /// model reads a line left to right, so here the number's position has already seen
    /// the label the instruction quotes, and one attention step from the label to the
    /// number after it finds the answer; number first, the label comes too late for the
    /// number's position to carry it.
    LabelFirst,
}

impl ElementFormat {
    /// Whether this is the default (left out of stored configs).
    pub fn is_default(&self) -> bool {
        *self == ElementFormat::default()
    }
}

impl Element {
    /// The element as one line of a prompt's list: `[12] button "Add to cart"`.
    pub fn line(&self) -> String {
        self.line_as(ElementFormat::NumberFirst)
    }

    /// The element's line in `format`.
    pub fn line_as(&self, format: ElementFormat) -> String {
        let mut what = format!("{} {:?}", self.role, self.label);
        if let Some(v) = &self.value {
            what.push_str(&format!(" value={v:?}"));
        }
        if let Some(c) = self.checked {
            what.push_str(if c { " checked" } else { " unchecked" });
        }
        if self.disabled {
            what.push_str(" disabled");
        }
        if !self.options.is_empty() {
            what.push_str(&format!(" options={:?}", self.options));
        }
        match format {
            ElementFormat::NumberFirst => format!("[{}] {what}", self.id),
            ElementFormat::LabelFirst => format!("{what} [{}]", self.id),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_element_line_puts_its_number_first_or_after_what_names_it() {
        let e = Element {
            id: 4,
            role: "textbox".into(),
            label: "Name".into(),
            value: Some("Ada".into()),
            disabled: true,
            in_viewport: true,
            ..Default::default()
        };
        assert_eq!(e.line(), r#"[4] textbox "Name" value="Ada" disabled"#);
        assert_eq!(
            e.line_as(ElementFormat::LabelFirst),
            r#"textbox "Name" value="Ada" disabled [4]"#
        );
        let hidden = Element {
            id: 5,
            in_viewport: false,
            ..e.clone()
        };
        let obs = Observation {
            elements: vec![e, hidden],
            ..Default::default()
        };
        assert_eq!(
            obs.element_lines_as(ElementFormat::LabelFirst),
            vec![r#"textbox "Name" value="Ada" disabled [4]"#.to_string()],
            "off-screen elements stay out in either format"
        );
        let parsed: ElementFormat = serde_json::from_str("\"label_first\"").unwrap();
        assert_eq!(parsed, ElementFormat::LabelFirst);
    }
}
