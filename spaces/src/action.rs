//! The action space and its one text grammar: the [`Action`] values here, the parser in
//! `parse` (lexer in `lex`), the canonical spelling in `display`.
//!
//! Every policy speaks the same grammar (documented in `docs/reference/formats.md`): scripted
//! reference solutions, the random policy, model outputs. [`parse`] turns one line into an
//! [`Action`]; `Display` writes the canonical line back, so `parse(&a.to_string()) == Ok(a)`.

mod display;
mod lex;
mod parse;

pub use parse::{ParseError, parse};

use crate::keys::KeyCombo;

/// What an action points at.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// An element number from the last observation.
    Element(u32),
    /// A viewport pixel.
    Point {
        /// CSS pixels from the left edge.
        x: f64,
        /// CSS pixels from the top edge.
        y: f64,
    },
    /// The first element matching a CSS selector (used by reference solutions, whose
    /// authors cannot know element numbers in advance).
    Selector(String),
}

/// How far to scroll.
#[derive(Debug, Clone, PartialEq)]
pub enum Scroll {
    /// One viewport height down.
    Down,
    /// One viewport height up.
    Up,
    /// By a pixel offset.
    By {
        /// Horizontal pixels.
        dx: f64,
        /// Vertical pixels.
        dy: f64,
    },
}

/// Which way to scroll an element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Towards the end of the content.
    Down,
    /// Towards the start of the content.
    Up,
}

/// The longest `wait(ms)` the grammar accepts, in milliseconds.
pub const MAX_WAIT_MS: u32 = 10_000;

/// One browser action.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Click a target with the left mouse button.
    Click(Target),
    /// Double-click a target with the left mouse button.
    DoubleClick(Target),
    /// Click a target with the right mouse button (opens context menus).
    RightClick(Target),
    /// Move the mouse over a target without pressing a button.
    Hover(Target),
    /// Press the left button on one target, move to another and release there (works for
    /// HTML5 drag and drop and for mouse-event drags alike).
    Drag {
        /// Where the drag starts.
        from: Target,
        /// Where it is dropped.
        to: Target,
    },
    /// Focus a target and type text, replacing its content unless `clear` is false.
    Type {
        /// Where to type.
        target: Target,
        /// What to type.
        text: String,
        /// Replace the existing content (the default) or append.
        clear: bool,
    },
    /// Choose an option of a `<select>` by visible text or value.
    Select {
        /// The `<select>`.
        target: Target,
        /// Option text or value.
        option: String,
    },
    /// Press a key or key combination on the focused element.
    Press(KeyCombo),
    /// Scroll the page.
    Scroll(Scroll),
    /// Scroll the scrollable area that contains a target (a list, a text box, a panel)
    /// by most of its visible height.
    ScrollElement {
        /// An element inside (or being) the scrollable area, or a point over it.
        target: Target,
        /// Which way.
        direction: Direction,
    },
    /// Navigate to a URL.
    Goto(String),
    /// Go back in history.
    Back,
    /// Go forward in history.
    Forward,
    /// Do nothing for this many milliseconds (at most [`MAX_WAIT_MS`]), then observe.
    Wait(u32),
    /// Make tab N (as numbered in the observation's tab list, from 1) the active one.
    SwitchTab(u32),
    /// Close tab N; closing the active tab activates the one before it.
    CloseTab(u32),
    /// End the episode with a final answer.
    Answer(String),
    /// End the episode without an answer.
    Stop,
}

impl Action {
    /// The same action with every target passed through `f` (grounding model outputs:
    /// rescaling grid coordinates, refusing target kinds a policy must not use).
    pub fn map_targets<E>(
        self,
        mut f: impl FnMut(Target) -> Result<Target, E>,
    ) -> Result<Action, E> {
        Ok(match self {
            Action::Click(t) => Action::Click(f(t)?),
            Action::DoubleClick(t) => Action::DoubleClick(f(t)?),
            Action::RightClick(t) => Action::RightClick(f(t)?),
            Action::Hover(t) => Action::Hover(f(t)?),
            Action::Drag { from, to } => Action::Drag {
                from: f(from)?,
                to: f(to)?,
            },
            Action::Type {
                target,
                text,
                clear,
            } => Action::Type {
                target: f(target)?,
                text,
                clear,
            },
            Action::Select { target, option } => Action::Select {
                target: f(target)?,
                option,
            },
            Action::ScrollElement { target, direction } => Action::ScrollElement {
                target: f(target)?,
                direction,
            },
            a @ (Action::Press(_)
            | Action::Scroll(_)
            | Action::Goto(_)
            | Action::Back
            | Action::Forward
            | Action::Wait(_)
            | Action::SwitchTab(_)
            | Action::CloseTab(_)
            | Action::Answer(_)
            | Action::Stop) => a,
        })
    }

    /// Whether this action ends the episode.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Action::Answer(_) | Action::Stop)
    }

    /// The action's name in the grammar.
    pub fn name(&self) -> &'static str {
        match self {
            Action::Click(_) => "click",
            Action::DoubleClick(_) => "double_click",
            Action::RightClick(_) => "right_click",
            Action::Hover(_) => "hover",
            Action::Drag { .. } => "drag",
            Action::Type { .. } => "type",
            Action::Select { .. } => "select",
            Action::Press(_) => "press",
            Action::Scroll(_) | Action::ScrollElement { .. } => "scroll",
            Action::Goto(_) => "goto",
            Action::Back => "back",
            Action::Forward => "forward",
            Action::Wait(_) => "wait",
            Action::SwitchTab(_) => "switch_tab",
            Action::CloseTab(_) => "close_tab",
            Action::Answer(_) => "answer",
            Action::Stop => "stop",
        }
    }
}

/// The action names the grammar knows.
pub const ACTION_NAMES: &[&str] = &[
    "click",
    "double_click",
    "right_click",
    "hover",
    "drag",
    "type",
    "select",
    "press",
    "scroll",
    "goto",
    "back",
    "forward",
    "wait",
    "switch_tab",
    "close_tab",
    "answer",
    "stop",
];
