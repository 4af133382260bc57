//! A clean stop: no new lease once the process is asked to stop, running episodes given a
//! grace period to finish and be stored, and the leases of those that did not handed back
//! (pending again, no attempt counted) before the browsers close. Without it a stopping
//! server kept leasing episodes whose browsers were already gone, and each failed its
//! attempts in milliseconds: a deploy turned queued work into permanent failures.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// Whether this process is stopping, and how many episodes it holds leases on.
#[derive(Debug, Default)]
pub struct Drain {
    stopping: AtomicBool,
    leased: AtomicUsize,
    released: Notify,
}

impl Drain {
    /// No new lease from now on.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
    }

    /// Whether [`Drain::stop`] was called.
    pub fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Counts a lease until the token is dropped (the episode stored, released or
    /// abandoned).
    pub fn hold(self: &Arc<Self>) -> Held {
        self.leased.fetch_add(1, Ordering::SeqCst);
        Held(self.clone())
    }

    /// Episodes leased now.
    pub fn leased(&self) -> usize {
        self.leased.load(Ordering::SeqCst)
    }

    /// Waits until no lease is held or `grace` is over; true if none is held.
    pub async fn idle_within(&self, grace: Duration) -> bool {
        let wait = async {
            loop {
                let released = self.released.notified();
                if self.leased() == 0 {
                    return;
                }
                released.await;
            }
        };
        tokio::time::timeout(grace, wait).await.is_ok()
    }
}

/// One held lease, counted while it lives.
#[derive(Debug)]
pub struct Held(Arc<Drain>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.leased.fetch_sub(1, Ordering::SeqCst);
        self.0.released.notify_waiters();
    }
}

/// What a clean stop did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drained {
    /// Episodes still running when the grace period ended, handed back to the queue.
    pub handed_back: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn idle_once_every_held_lease_is_dropped() {
        let d = Arc::new(Drain::default());
        assert!(d.idle_within(Duration::from_millis(1)).await);
        let a = d.hold();
        let b = d.hold();
        assert_eq!(d.leased(), 2);
        assert!(!d.idle_within(Duration::from_millis(20)).await);
        drop(a);
        let waiter = {
            let d = d.clone();
            tokio::spawn(async move { d.idle_within(Duration::from_secs(5)).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(b);
        assert!(waiter.await.unwrap());
        assert!(!d.stopping());
        d.stop();
        assert!(d.stopping());
    }
}
