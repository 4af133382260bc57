//! Runs created through the API, executed by a server: [`submit`] validates and queues a
//! run; [`Executor`] claims queued runs one at a time with a lease in Postgres, registers
//! the run's two policies in the server's engine and executes it. The lease is renewed
//! while the run works; a server killed mid-run stops renewing, and the next server (or
//! the same one restarted) claims the run once the lease lapses and resumes it at the
//! iteration and phase it was in. Runs started by `surfgym train run` are never claimed:
//! that process executes them.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use engine::Engine;
use store::{Status, Store};
use tracing::Instrument;
use uuid::Uuid;

use crate::run::{self, Event};
use crate::{RunConfig, RunError};

/// Validates a run (the same checks as `surfgym train run`: the config, then the tasks
/// and the model) and stores it queued for a server's [`Executor`].
pub async fn submit(store: &Store, cfg: &RunConfig) -> Result<Uuid, RunError> {
    cfg.validate().map_err(RunError::Config)?;
    over_the_api(cfg, std::env::var(ALLOW_EXTERNAL).is_ok_and(|v| v == "1"))?;
    run::check(store, cfg).await?;
    let id = Uuid::new_v4();
    let value = serde_json::to_value(cfg).map_err(|e| RunError::Config(e.to_string()))?;
    store.create_managed_run(id, &cfg.name, &value).await?;
    Ok(id)
}

/// Set to `1` in a server's environment to let API clients configure external trainers.
pub const ALLOW_EXTERNAL: &str = "SURFGYM_ALLOW_EXTERNAL_TRAINERS";

/// An external trainer is a command the server would run for whoever may create runs:
/// over the API only where the server's operator allowed it (`surfgym train run` is the
/// operator's own command line).
fn over_the_api(cfg: &RunConfig, allowed: bool) -> Result<(), RunError> {
    if cfg.trainer.is_builtin() || allowed {
        return Ok(());
    }
    Err(RunError::Config(format!(
        "trainer: an external trainer runs a command on the server, which this server does not allow (start it with {ALLOW_EXTERNAL}=1, or use `surfgym train run`)"
    )))
}

/// Finds the ONNX Runtime library a run's model needs (the CLI's model options know).
pub type DylibFor = Arc<dyn Fn(&RunConfig) -> Result<PathBuf, String> + Send + Sync>;

/// Executes managed runs for one server.
pub struct Executor {
    /// The server's engine: the run's campaigns share its browser pool.
    pub engine: Engine,
    /// Where runs keep their versions.
    pub root: PathBuf,
    /// This server's identity (the engine's runner identity serves).
    pub owner: String,
    /// How long a claim lasts without renewal.
    pub lease: Duration,
    /// See [`DylibFor`].
    pub dylib: DylibFor,
}

impl Executor {
    /// Claims and executes runs until the task is dropped.
    pub fn spawn(self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            loop {
                match self.engine.store().claim_run(&self.owner, self.lease).await {
                    Ok(Some(id)) => {
                        let span = tracing::info_span!("training_run", run = %id);
                        match self.one(id).instrument(span).await {
                            Ok(state) => tracing::info!(%state, "training run stopped"),
                            Err(e) => tracing::error!(error = %e, "training run failed"),
                        }
                        let _ = self.engine.store().release_run(id, &self.owner).await;
                    }
                    Ok(None) => tokio::time::sleep(Duration::from_secs(2)).await,
                    Err(e) => {
                        tracing::error!(error = %e, "cannot claim training runs; retrying");
                        tokio::time::sleep(Duration::from_secs(5)).await;
                    }
                }
            }
        })
    }

    async fn one(&self, id: Uuid) -> Result<Status, RunError> {
        let store = self.engine.store();
        let view = store.get_run(id).await?.ok_or(RunError::NoRun(id))?;
        let failed = |e: RunError| async move {
            let _ = store
                .set_run_state(id, Status::Failed, Some(&e.to_string()))
                .await;
            e
        };
        let cfg: RunConfig = match serde_json::from_value(view.config.clone()) {
            Ok(c) => c,
            Err(e) => return Err(failed(RunError::Config(format!("config: {e}"))).await),
        };
        let dylib = match (self.dylib)(&cfg) {
            Ok(d) => d,
            Err(e) => return Err(failed(RunError::Config(format!("model: {e}"))).await),
        };
        let (root, v) = (self.root.clone(), view.clone());
        let prepared = {
            let (cfg, dylib) = (cfg.clone(), dylib.clone());
            tokio::task::spawn_blocking(move || run::prepare(&cfg, &v, &root, &dylib))
                .await
                .map_err(|e| RunError::Config(format!("loading the model: {e}")))
        };
        let policies = match prepared.and_then(|p| p) {
            Ok(p) => p,
            Err(e) => return Err(failed(e).await),
        };
        for p in policies.all() {
            self.engine.register_policy(p);
        }
        let events = |e: Event| log(id, e);
        let work = run::execute(&self.engine, &policies, id, &self.root, &dylib, &events);
        let result = tokio::select! {
            r = work => r.map(|v| v.state),
            lost = self.keep_lease(id) => Err(lost),
        };
        // The models stay loaded only while the run is here.
        let (sample, greedy) = run::policy_names(id);
        self.engine.unregister_policy(&sample);
        self.engine.unregister_policy(&greedy);
        self.engine.unregister_policy(&run::demo_name(id));
        result
    }

    /// Renews the lease until it is lost (another server took the run over after this one
    /// missed renewals), which stops the run here.
    async fn keep_lease(&self, id: Uuid) -> RunError {
        loop {
            tokio::time::sleep(self.lease / 3).await;
            match self
                .engine
                .store()
                .renew_run_lease(id, &self.owner, self.lease)
                .await
            {
                Ok(true) => {}
                Ok(false) => {
                    return RunError::Config(format!(
                        "lost the lease on training run {id} to another server"
                    ));
                }
                Err(e) => tracing::warn!(error = %e, "cannot renew the training run's lease"),
            }
        }
    }
}

fn log(id: Uuid, e: Event) {
    match e {
        Event::Phase { iteration, phase } => tracing::info!(run = %id, iteration, %phase, "phase"),
        Event::Campaign { iteration, id: c } => {
            tracing::info!(run = %id, iteration, campaign = %c, "campaign")
        }
        Event::Step { .. } => {}
        Event::Done(it) => tracing::info!(
            run = %id, iteration = it.idx, train = ?it.train_success, eval = ?it.eval_success,
            "iteration done"
        ),
    }
}

/// Where a server keeps training runs' versions under its data directory.
pub fn runs_root(data_dir: &Path) -> PathBuf {
    data_dir.join("runs")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn external_trainers_come_over_the_api_only_where_the_server_allows_them() {
        let mut v = serde_json::json!({
            "name": "ext", "model": "m", "train": {"ids": ["miniwob.click-test"]},
            "held_out": "seeds", "iterations": 1, "curriculum": {"kind": "tti"}, "eval_horizon": 5
        });
        let builtin = RunConfig::parse(&v.to_string()).unwrap();
        assert!(over_the_api(&builtin, false).is_ok());
        v["trainer"] = serde_json::json!({"kind": "external", "command": ["rm", "-rf", "/"]});
        let external = RunConfig::parse(&v.to_string()).unwrap();
        let e = over_the_api(&external, false).unwrap_err().to_string();
        assert!(
            e.starts_with("trainer: ") && e.contains(ALLOW_EXTERNAL),
            "{e}"
        );
        assert!(over_the_api(&external, true).is_ok());
    }
}
