//! Tests across every crate, one binary: end to end on real Chromium, a real Postgres
//! server and the bundled practice sites; the CLI as a user runs it; training runs; the
//! dashboard in a real browser; and `tidy`, the repository's own rules.

mod common;

mod bench_curriculum;
mod cli;
mod dashboard_v2;
mod door;
mod e2e;
mod judge_error_view;
mod judges;
mod learning;
mod miniwob;
mod policies;
mod recheck;
mod rewards;
mod sessions;
mod shared_database;
mod signin;
mod tidy;
mod tokens;
mod train;
mod train_api;
mod train_budget;
mod train_external;
mod train_overlap;
mod train_page;
mod train_run;
mod train_served;
mod warm_start;
mod workers;
