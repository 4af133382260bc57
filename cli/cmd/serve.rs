//! `surfgym serve`: the API and dashboard (and the practice sites), running campaigns as
//! they come, until Ctrl-C or SIGTERM: then no new episode starts, the running ones get a
//! grace period, the rest go back to the queue, and the browsers close.

use std::process::ExitCode;

use clap::Args;

use crate::args::{Common, ServerArgs};
use crate::setup::{Grace, drain, environment, finish, start_web, stopped, url};

/// `surfgym serve`.
#[derive(Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(flatten)]
    pub grace: Grace,
    #[command(flatten)]
    pub sessions: SessionArgs,
}

/// Limits on environment sessions (`/api/sessions`, `/openenv`).
#[derive(Args)]
pub struct SessionArgs {
    /// Environment sessions open at once (default: the browser pool's contexts).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_sessions: Option<u32>,
    /// Environment sessions open at once per API token (default: --max-sessions).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub sessions_per_token: Option<u32>,
    /// An environment session without a request for this long is ended and stored.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
    pub session_idle_secs: u64,
    /// The longest one step of an environment session may take.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub session_step_secs: u64,
}

impl SessionArgs {
    /// The limits, over the engine's defaults.
    pub fn limits(
        &self,
        defaults: engine::sessions::SessionLimits,
    ) -> engine::sessions::SessionLimits {
        let max = self
            .max_sessions
            .map_or(defaults.max_sessions, |n| n as usize);
        engine::sessions::SessionLimits {
            max_sessions: max,
            per_client: self.sessions_per_token.map_or(max, |n| n as usize),
            idle: std::time::Duration::from_secs(self.session_idle_secs),
            step: std::time::Duration::from_secs(self.session_step_secs),
        }
    }
}

/// `surfgym serve`.
pub async fn serve(common: &Common, args: ServeArgs) -> anyhow::Result<ExitCode> {
    // Before anything starts: `--no-auth` beyond loopback is refused.
    args.server.access()?;
    let env = environment(common, args.server.sites_port).await?;
    env.engine
        .set_session_limits(args.sessions.limits(env.engine.session_limits()));
    let addr = start_web(&env.engine, &args.server).await?;
    env.engine.start_scheduler().await;
    let executor = start_training_executor(common, &env.engine);
    println!(
        "dashboard and API: {}  (OpenAPI: {}api/openapi.json); Ctrl-C or SIGTERM stops it",
        url(addr),
        url(addr)
    );
    stopped().await;
    // A training run's phases stop here; its campaigns' episodes drain with the rest.
    executor.abort();
    drain(&env.engine, args.grace).await?;
    finish(env).await?;
    Ok(ExitCode::SUCCESS)
}

/// Executes training runs created through the API (`trainloop::executor`): one at a time,
/// under a lease another server takes over if this one dies.
pub fn start_training_executor(
    common: &Common,
    engine: &engine::Engine,
) -> tokio::task::JoinHandle<()> {
    // The ONNX Runtime library does not depend on the model; a missing one fails each run
    // with the reason rather than the server.
    let dylib = common
        .models
        .onnx_options(common, std::path::PathBuf::new())
        .map(|o| o.dylib)
        .map_err(|e| format!("{e:#}"));
    trainloop::executor::Executor {
        engine: engine.clone(),
        root: trainloop::executor::runs_root(&common.data_dir),
        owner: format!(
            "{}:{}:{}",
            std::fs::read_to_string("/etc/hostname")
                .unwrap_or_default()
                .trim(),
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ),
        // As long as an episode's: how soon another server takes over from a dead one.
        lease: std::time::Duration::from_secs(common.lease_secs.max(1)),
        dylib: std::sync::Arc::new(move |_| dylib.clone()),
    }
    .spawn()
}
