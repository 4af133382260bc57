//! Campaign analysis over HTTP: per-task aggregates and breakdowns, the searchable episode
//! table, plots of a campaign's time, latencies and steps, and two campaigns (or two
//! rollouts of one task) side by side. Each view has a JSON endpoint under `/api` and a
//! page rendered on the server (plots as inline SVG from [`crate::plot`]); both read the
//! same validated parameters, so a page shows exactly what its endpoint answers.

mod api;
mod compare;
mod html;
mod pages;
mod params;
mod plots;

pub use api::{analysis as analysis_json, compare as compare_json, episodes as episodes_json};
pub use api::plots as plots_json;
pub use compare::{compare_page, pair_page};
pub use pages::{analysis_page, episodes_page, style};
pub use plots::plots_page;
