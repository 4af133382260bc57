//! The action grammar's integration tests, one binary.

mod grammar;
mod props;
