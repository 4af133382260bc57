//! One module per subcommand: its clap arguments and what it does. Shared arguments are
//! `crate::args`'; setting up the database, pool and engine is `crate::setup`'s; the
//! benchmarks are `crate::bench`.

pub mod audit;
pub mod campaign;
pub mod db;
pub mod demo;
mod demo_train;
pub mod export;
pub mod har;
pub mod judge;
pub mod judge_random;
pub mod observe;
pub mod run;
pub mod serve;
pub mod serve_policy;
pub mod tasks;
pub mod token;
pub mod train;
pub mod worker;
