//! The trainer's integration tests, one binary: parity with ONNX Runtime, precision, shared
//! prompts, LoRA adapters, published versions, the update's regularization and guard.

mod common;

mod lora;
mod parity;
mod precision;
mod regularize;
mod shared_prompts;
mod versions;
