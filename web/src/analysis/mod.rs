//! Campaign analysis over HTTP: per-task aggregates and breakdowns, the searchable episode
//! table, plots of a campaign's time, latencies and steps, and two campaigns (or two
//! rollouts of one task) side by side. Each view has a JSON endpoint under `/api` and a
//! page rendered on the server (plots as inline SVG from [`crate::plot`]); both read the
//! same validated parameters, so a page shows exactly what its endpoint answers.

mod api;
mod compare;
pub(crate) mod html;
mod openapi;
mod pages;
mod params;
mod plots;

pub use api::plots as plots_json;
pub use api::{analysis as analysis_json, compare as compare_json, episodes as episodes_json};
pub use compare::{compare_page, pair_page};
pub use openapi::openapi_params;
pub use pages::{analysis_page, episodes_page, style};
pub use plots::plots_page;

/// Whether `path` is one of the analysis pages (for the dashboard's sign-in redirect).
pub fn is_page(path: &str) -> bool {
    path == "/compare" || path.starts_with("/compare/") || path.starts_with("/campaigns/")
}
