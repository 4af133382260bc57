//! Tests that must have the machine to themselves, one at a time, so they are not in the
//! `it` binary, whose tests run side by side: `/metrics` counts exactly one campaign's
//! work, which the process-wide counters only show while no other campaign runs in the
//! process; and browsers orphaned by a killed process must still be alive until the next
//! launch, which any browser launch (another test's) would reap first.

#[path = "../it/common/mod.rs"]
mod common;

mod metrics_route;
mod orphans;

/// Held by each test here for its whole run.
static ALONE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
