//! `surfgym serve`: the API and dashboard (and the practice sites), running campaigns as
//! they come, until Ctrl-C or SIGTERM (which close its browsers first).

use std::process::ExitCode;

use clap::Args;

use crate::args::{Common, ServerArgs};
use crate::setup::{environment, finish, start_web, stopped, url};

/// `surfgym serve`.
#[derive(Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub server: ServerArgs,
}

/// `surfgym serve`.
pub async fn serve(common: &Common, args: ServeArgs) -> anyhow::Result<ExitCode> {
    // Before anything starts: `--no-auth` beyond loopback is refused.
    args.server.access()?;
    let env = environment(common, args.server.sites_port).await?;
    let addr = start_web(&env.engine, &args.server).await?;
    env.engine.start_scheduler().await;
    println!(
        "dashboard and API: {}  (OpenAPI: {}api/openapi.json); Ctrl-C or SIGTERM stops it",
        url(addr),
        url(addr)
    );
    stopped().await;
    finish(env).await?;
    Ok(ExitCode::SUCCESS)
}
