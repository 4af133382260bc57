//! Training runs over HTTP: `/api/training-runs` (create, list, read, pause, resume,
//! cancel, live events) and the dashboard's server-rendered training pages. The loop and
//! its checks are `trainloop`'s, so the API refuses what `surfgym train run` refuses, with
//! the same messages; who executes a run is `trainloop::executor`'s business.

mod api;
mod detail;
mod events;
pub(crate) mod html;
mod pages;

pub use api::{cancel, create, get, list, pause, resume};
pub use events::{metrics_text, run_events};
pub use pages::{compare_page, list_page, run_page, script, style};
