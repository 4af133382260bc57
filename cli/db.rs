//! Database set-up for the commands: `DATABASE_URL` when given, else the private cluster
//! under the data directory (started when it is not running).

use anyhow::Context;
use pg_cluster::LocalCluster;
use store::Store;

use crate::args::Common;

/// A connected store, and the private cluster when this process started one.
pub struct Database {
    pub store: Store,
    /// Where it is, for worker processes.
    pub url: String,
    pub cluster: Option<LocalCluster>,
}

/// Connects to `DATABASE_URL`, or starts the private cluster first.
pub async fn open(common: &Common) -> anyhow::Result<Database> {
    let (url, cluster) = match &common.database_url {
        Some(url) => (url.clone(), None),
        None => {
            let dir = common.data_dir.join("pg");
            let cluster = LocalCluster::ensure_started(&dir)
                .await
                .with_context(|| format!("starting the private Postgres in {}", dir.display()))?;
            (cluster.url(), Some(cluster))
        }
    };
    let store = Store::connect(&url).await?;
    Ok(Database {
        store,
        url,
        cluster,
    })
}
