//! A policy that follows a version link (`inference::version_link`): each new episode gets
//! the version the link names when it starts and keeps it to its end, while a training
//! loop promotes newer versions beside the rollouts.
//!
//! A moved link is loaded in the background; episodes keep starting on the version in
//! use until the new one has loaded. A version that fails to load (a missing tensor, a
//! foreign base, a corrupt file) is refused with its reason and the one in use keeps
//! serving; moving the link again tries again.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::BoxFuture;
use inference::version_link::VersionLink;

use super::{Decision, Policy, PolicyError, StepInput};
use store::PolicyCard;

/// Loads the policy for one model directory.
pub type Loader = Arc<dyn Fn(&Path) -> Result<Arc<dyn Policy>, String> + Send + Sync>;

/// A version the link was moved to that could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The version directory.
    pub dir: PathBuf,
    /// Why.
    pub why: String,
}

struct State {
    link: VersionLink,
    current: Arc<dyn Policy>,
    /// The directory `current` was loaded from.
    dir: PathBuf,
    loading: bool,
    refused: Option<Refused>,
}

/// See the module documentation.
pub struct Following {
    name: String,
    load: Loader,
    state: Arc<Mutex<State>>,
}

impl Following {
    /// Loads what `link` names now (synchronously: a link that does not load is an error
    /// at start-up, not a background warning).
    pub fn new(name: &str, link: &Path, load: Loader) -> Result<Following, String> {
        let watch = VersionLink::new(link).map_err(|e| format!("{}: {e}", link.display()))?;
        let dir = watch.target().to_path_buf();
        let current = load(&dir)?;
        Ok(Following {
            name: name.to_string(),
            load,
            state: Arc::new(Mutex::new(State {
                link: watch,
                current,
                dir,
                loading: false,
                refused: None,
            })),
        })
    }

    /// The version directory new episodes start on now.
    pub fn serving(&self) -> PathBuf {
        self.lock().dir.clone()
    }

    /// The last version the link named that could not be loaded, if the link has not
    /// moved on since.
    pub fn refused(&self) -> Option<Refused> {
        self.lock().refused.clone()
    }

    /// Waits until the version the link names now is the one new episodes start on
    /// (loading it if the link moved): what a training loop calls after promoting a
    /// version and before starting the campaign that must run it. A version that cannot
    /// be loaded is returned as refused.
    pub async fn catch_up(&self) -> Result<PathBuf, Refused> {
        loop {
            self.look();
            {
                let s = self.lock();
                if !s.loading {
                    if s.dir == s.link.target() {
                        return Ok(s.dir.clone());
                    }
                    if let Some(r) = s.refused.as_ref().filter(|r| r.dir == s.link.target()) {
                        return Err(r.clone());
                    }
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts loading the link's new target if it moved (at most one load at a time; a
    /// move seen while loading is picked up by a later look).
    fn look(&self) {
        let mut s = self.lock();
        if s.loading {
            return;
        }
        let Some(dir) = s.link.moved() else {
            return;
        };
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        s.loading = true;
        drop(s);
        let (load, state) = (self.load.clone(), self.state.clone());
        rt.spawn(async move {
            let d = dir.clone();
            let loaded = tokio::task::spawn_blocking(move || load(&d))
                .await
                .unwrap_or_else(|e| Err(format!("loading thread failed: {e}")));
            let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
            s.loading = false;
            match loaded {
                Ok(policy) => {
                    tracing::info!(version = %dir.display(), "new episodes run the promoted policy version");
                    s.current = policy;
                    s.dir = dir;
                    s.refused = None;
                }
                Err(why) => {
                    tracing::error!(version = %dir.display(), error = %why, serving = %s.dir.display(),
                        "the promoted policy version cannot be loaded; the one in use keeps serving");
                    s.refused = Some(Refused { dir, why });
                }
            }
        });
    }
}

impl Policy for Following {
    fn name(&self) -> &str {
        &self.name
    }

    fn decide(&self, input: StepInput) -> BoxFuture<'_, Result<Decision, PolicyError>> {
        let p = self.lock().current.clone();
        async move { p.decide(input).await }.boxed()
    }

    fn card(&self) -> PolicyCard {
        self.lock().current.card()
    }

    fn retries_own_calls(&self) -> bool {
        self.lock().current.retries_own_calls()
    }

    fn decide_batch(
        &self,
        inputs: Vec<StepInput>,
    ) -> BoxFuture<'_, Vec<Result<Decision, PolicyError>>> {
        let p = self.lock().current.clone();
        async move { p.decide_batch(inputs).await }.boxed()
    }

    fn pinned(&self) -> Option<Arc<dyn Policy>> {
        self.look();
        Some(self.lock().current.clone())
    }
}
