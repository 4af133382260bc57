//! Drives Chromium over the Chrome DevTools Protocol for web-agent episodes.
//!
//! [`BrowserPool`] keeps warm Chromium processes (local, or remote by CDP address) and
//! leases [`Session`]s: each an isolated browser context (own cookies, storage, cache) with
//! one page to start with (1280x720 unless the pool or the lease sets another
//! [`Screen`]); pages may open more tabs. A session
//! [`observe`](Session::observe)s the active tab (screenshot, optional set-of-marks and
//! accessibility tree, URL, title, numbered interactive [`Element`]s, open tabs, and the
//! [`PageEvent`]s since the last step) and [`act`](Session::act)s: every [`Action`] of the
//! one text grammar in [`action`], parsed by [`parse_action`].
//!
//! Hostile pages are contained: dialogs are answered, downloads refused, non-web schemes
//! and [`UrlPolicy`] violations blocked, runaway scripts terminated, crashed tabs reported.
//! The live web is met at the same browser-level gate: [`Politeness`] per domain, and a
//! session's exchanges recorded or answered from a [`Recording`] (HAR in and out).
//!
//! Failures come in two kinds: a failed *action* is a message in the next observation
//! (the agent's problem), a [`PoolError`] is infrastructure (the runner's problem: retry
//! the episode, never score it).
//!
//! The action grammar, keys, screens and observation types are `spaces`' (re-exported
//! here); this crate knows Chromium and CDP only: no database, no policies, no rubrics, no
//! tasks.
#![deny(missing_docs)]

mod ax_tree;
mod browser;
mod config;
mod error;
mod events;
mod js;
pub mod marks;
mod politeness;
mod pool;
mod session;
mod traffic;
mod url_policy;

// The action and observation spaces live in `spaces`; these keep their paths here.
pub use spaces::action;
use spaces::{keys, observation};

pub use action::{Action, ParseError, Scroll, Target, parse as parse_action};
pub use browser::memory::TreeMemory;
pub use config::{DialogPolicy, ImageFormat, PoolConfig, PoolScreen, Screen};
pub use error::PoolError;
pub use events::PageEvent;
pub use keys::{KeyCombo, Modifiers};
pub use observation::{Element, Observation, PageSignals, Rect, Screenshot, ScrollState, TabInfo};
pub use politeness::{DomainPermit, Politeness, PolitenessStats, domain_of};
pub use pool::{BrowserPool, PoolStats};
pub use session::{ActReport, ElementState, Session};
pub use traffic::har::{HarError, from_har, to_har};
pub use traffic::{Exchange, Recording, Unmatched, VOLATILE_PARAMS};
pub use url_policy::UrlPolicy;
