//! The engine's integration tests, one binary: the runner, the judges and the policies
//! on real Chromium, a real Postgres server and the practice sites.

mod common;

mod calibration;
mod check_pages;
mod episode_pages;
mod follow;
mod js_check;
mod live_web;
mod model_judge;
mod onnx;
mod onnx_paired;
mod onnx_qwen2vl;
mod parse_failures;
mod runner;
mod trace_replay;
