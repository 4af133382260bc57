//! `surfgym worker`: runs episodes of the queued and running campaigns in the database,
//! beside any number of other workers, until Ctrl-C or SIGTERM.

use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use crate::args::Common;
use crate::db;
use crate::setup::{Grace, drain, engine, environment, pool_config, stopped};

/// `surfgym worker`.
#[derive(Args)]
pub struct WorkerArgs {
    /// Also serve the bundled practice sites (on --sites-port and up) and run the bundled
    /// and MiniWoB++ tasks on them; without it, tasks must be reachable as registered.
    #[arg(long)]
    pub serve_sites: bool,
    /// First port of the practice sites, with --serve-sites (0: any free ports).
    #[arg(long, default_value_t = 8701)]
    pub sites_port: u16,
    /// Serve this worker's Prometheus metrics at http://ADDR/metrics (e.g. 0.0.0.0:9100;
    /// port 0 picks a free one, printed at start).
    #[arg(long)]
    pub metrics_addr: Option<std::net::SocketAddr>,
    #[command(flatten)]
    pub grace: Grace,
}

/// `surfgym worker`.
pub async fn worker(common: &Common, args: WorkerArgs) -> anyhow::Result<ExitCode> {
    let (engine, _sites) = if args.serve_sites {
        let env = environment(common, args.sites_port).await?;
        (env.engine, Some(env.sites))
    } else {
        pool_config(common)?;
        let db = db::open(common).await?;
        (engine(common, &db)?, None)
    };
    if let Some(addr) = args.metrics_addr {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("--metrics-addr {addr}: cannot listen there"))?;
        println!("metrics at http://{}/metrics", listener.local_addr()?);
        let app = web::metrics_router(web::AppState {
            engine: engine.clone(),
        });
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "metrics server stopped");
            }
        });
    }
    engine.start_scheduler().await;
    println!(
        "worker running; Ctrl-C or SIGTERM stops it (running episodes get --grace-secs to finish, the rest go back to the queue)"
    );
    stopped().await;
    drain(&engine, args.grace).await?;
    Ok(ExitCode::SUCCESS)
}
