//! Arguments more than one command takes: the global options every command shares
//! ([`Common`], with the browser and model options it flattens in), where to serve, and
//! which tasks a campaign runs. Only clap definitions and their translation into engine
//! types; nothing here opens a database or starts a browser.

pub mod browser;
pub mod model;

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;

use clap::Args;
use store::TaskFilter;

/// Options every command shares.
#[derive(Args, Clone)]
pub struct Common {
    /// Where surfgym keeps its private Postgres cluster and other state.
    #[arg(
        long,
        env = "SURFGYM_DATA_DIR",
        default_value = ".surfgym",
        global = true
    )]
    pub data_dir: PathBuf,
    /// Postgres to use; without it a private cluster is started under the data directory.
    #[arg(long, env = "DATABASE_URL", global = true, hide_env_values = true)]
    pub database_url: Option<String>,
    /// Chromium executable.
    #[arg(
        long,
        env = "SURFGYM_CHROMIUM",
        default_value = "/usr/bin/chromium",
        global = true
    )]
    pub chromium: PathBuf,
    /// Browser processes.
    #[arg(long, default_value_t = 1, global = true)]
    pub browsers: usize,
    /// Concurrent browser contexts (episodes) per browser.
    #[arg(long, default_value_t = 4, global = true)]
    pub contexts: usize,
    /// Episode lease length in seconds: how long until a dead runner's episodes are
    /// reclaimed by others.
    #[arg(long, default_value_t = 60, global = true)]
    pub lease_secs: u64,
    /// Median latency of the simulated policies (`scripted-sim`, `random-sim`), in ms.
    #[arg(long, default_value_t = 800, global = true)]
    pub sim_latency_ms: u64,
    /// Log-space spread of the simulated latency (0.7: p99 about 5x the median).
    #[arg(long, default_value_t = 0.7, global = true)]
    pub sim_sigma: f64,
    #[command(flatten)]
    pub models: model::ModelArgs,
    #[command(flatten)]
    pub browser: browser::BrowserArgs,
}

/// Where to serve.
#[derive(Args, Clone)]
pub struct ServerArgs {
    /// Address of the API and dashboard (loopback unless you mean it).
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub bind: IpAddr,
    /// Port of the API and dashboard (a free one is used when it is taken).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// First port of the practice sites, one port per site (0: any free ports).
    #[arg(long, default_value_t = 8701)]
    pub sites_port: u16,
    /// Accept writes without an API token (loopback only): the local opt-out.
    #[arg(long)]
    pub no_auth: bool,
}

impl ServerArgs {
    /// Which requests need an API token; `--no-auth` beyond loopback is an error.
    pub fn access(&self) -> anyhow::Result<web::Access> {
        web::Access::for_bind(self.bind, self.no_auth).map_err(anyhow::Error::msg)
    }
}

/// Which tasks a campaign runs.
#[derive(Args, Clone, Default)]
pub struct TaskArgs {
    /// Only tasks of this website.
    #[arg(long)]
    pub site: Option<String>,
    /// Only tasks with this tag.
    #[arg(long)]
    pub tag: Option<String>,
    /// Only tasks of this difficulty (easy, medium, hard).
    #[arg(long)]
    pub difficulty: Option<String>,
    /// Only tasks of this split (train, test).
    #[arg(long)]
    pub split: Option<String>,
    /// Only these task ids.
    #[arg(long = "task", value_name = "ID")]
    pub ids: Vec<String>,
}

impl TaskArgs {
    /// The store's filter for these options.
    pub fn filter(&self) -> TaskFilter {
        TaskFilter {
            site: self.site.clone(),
            tag: self.tag.clone(),
            difficulty: self.difficulty.clone(),
            split: self.split.clone(),
            ids: self.ids.clone(),
        }
    }
}
