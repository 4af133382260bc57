//! The store's integration tests, one binary: every query against a real Postgres server
//! (`#[sqlx::test]` gives each test a fresh migrated database).

mod records;
mod synthetic;
