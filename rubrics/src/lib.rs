//! rubrics
