//! Drives Chromium over the Chrome DevTools Protocol for web-agent episodes.
//!
//! [`BrowserPool`] keeps warm Chromium processes and leases [`Session`]s: each an isolated
//! browser context (own cookies, storage, cache) with one 1280x720 page. A session
//! [`observe`](Session::observe)s the page (JPEG screenshot, URL, title, numbered
//! interactive [`Element`]s) and [`act`](Session::act)s: every [`Action`] of the one text
//! grammar in [`action`], parsed by [`parse_action`].
//!
//! Failures come in two kinds: a failed *action* is a message in the next observation
//! (the agent's problem), a [`PoolError`] is infrastructure (the runner's problem: retry
//! the episode, never score it).
//!
//! This crate knows Chromium and CDP only: no database, no policies, no rubrics, no tasks.
#![deny(missing_docs)]

pub mod action;
mod config;
mod error;
mod js;
mod keys;
mod launch;
mod memory;
mod observation;
mod pool;
mod session;

pub use action::{Action, ParseError, Scroll, Target, parse as parse_action};
pub use config::PoolConfig;
pub use error::PoolError;
pub use keys::{KeyCombo, Modifiers};
pub use memory::TreeMemory;
pub use observation::{Element, Observation, Rect, Screenshot, ScrollState};
pub use pool::{BrowserPool, PoolStats};
pub use session::{ActReport, ElementState, Session};
