//! The gym's action and observation spaces, with no browser behind them.
//!
//! Every policy speaks one text grammar ([`action`]): [`parse_action`] reads a line into an
//! [`Action`], `Display` writes its canonical line back, [`keys`] holds the one key list, and
//! [`pattern`] derives the constrained-decoding regular expression from the same tables, so
//! the language is defined once. What a policy sees is an [`Observation`] (screenshot,
//! numbered [`Element`]s, tabs, [`PageEvent`]s) of a page rendered at a [`Screen`].
//! [`browsergym`] reads BrowserGym's action strings into the same actions, through the same
//! grammar, for agents written against BrowserGym.
//!
//! This crate must never know Chromium, CDP, async runtimes or model runtimes: the browser
//! (`browser-pool`), the tasks, the engine, `inference` and the trainer all depend on it,
//! not the reverse.
#![deny(missing_docs)]

pub mod action;
pub mod action_set;
pub mod browsergym;
pub mod events;
pub mod keys;
pub mod observation;
pub mod pattern;
pub mod screen;

pub use action::{Action, Direction, ParseError, Scroll, Target, parse as parse_action};
pub use action_set::{ActionSet, ActionSetError};
pub use events::PageEvent;
pub use keys::{KeyCombo, KeyDef, Modifiers};
pub use observation::{
    Element, ElementFormat, Observation, PageSignals, Rect, Screenshot, ScrollState, TabInfo,
};
pub use pattern::Grounding;
pub use screen::Screen;
