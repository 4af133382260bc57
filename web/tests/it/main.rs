//! The web server's integration tests, one binary: the REST API and the dashboard over
//! real HTTP, on a real Postgres server.

mod analysis_fixture;
#[path = "../../../tests/it/common/mod.rs"]
mod common;
mod support;

mod analysis;
mod api_auth;
mod api_campaigns;
mod api_door;
mod api_import;
mod api_judge_error;
mod api_server;
mod api_synthetic;
mod api_table;
mod api_tasks;
