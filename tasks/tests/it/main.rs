//! The task model's integration tests, one binary: importers, the bundled suite, audits.

mod audit;
mod formats;
mod import_files;
mod props;
mod tasks;
