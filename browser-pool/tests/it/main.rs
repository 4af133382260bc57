//! The browser pool's integration tests, one binary: real Chromium driving local pages,
//! hostile ones included.

mod common;
mod hostile_site;

mod elements;
mod hostile;
mod hostile_browsers;
mod hostile_network;
mod landing;
mod politeness;
mod pool;
mod settling;
mod traffic;
