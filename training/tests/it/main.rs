//! The trainer's integration tests, one binary: parity with ONNX Runtime, precision,
//! published versions.

mod common;

mod parity;
mod precision;
mod versions;
