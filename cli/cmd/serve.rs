//! `surfgym serve`: the API and dashboard (and the practice sites), running campaigns as
//! they come, until Ctrl-C.

use std::process::ExitCode;

use clap::Args;

use crate::args::{Common, ServerArgs};
use crate::setup::{environment, finish, start_web, url};

/// `surfgym serve`.
#[derive(Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub server: ServerArgs,
}

/// `surfgym serve`.
pub async fn serve(common: &Common, args: ServeArgs) -> anyhow::Result<ExitCode> {
    let env = environment(common, args.server.sites_port).await?;
    let addr = start_web(&env.engine, &args.server).await?;
    env.engine.start_scheduler().await;
    println!(
        "dashboard and API: {}  (OpenAPI: {}api/openapi.json); Ctrl-C to stop",
        url(addr),
        url(addr)
    );
    tokio::signal::ctrl_c().await?;
    finish(env).await?;
    Ok(ExitCode::SUCCESS)
}
