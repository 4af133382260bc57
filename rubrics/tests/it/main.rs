//! The rubrics' integration tests, one binary.

mod props;
mod rubrics;
