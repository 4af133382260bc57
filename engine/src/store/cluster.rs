//! A private PostgreSQL cluster under the project's data directory, for when no
//! `DATABASE_URL` is given: `initdb` once, `pg_ctl start` on a free loopback port, reuse it
//! while it runs. As root, the server runs as the `postgres` user (it refuses root).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::process::Command;

/// Why the private cluster could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// No PostgreSQL server binaries were found.
    #[error(
        "PostgreSQL server binaries not found (looked in $PG_BIN_DIR, /usr/lib/postgresql/*/bin and PATH): \
         install Debian's `postgresql` package, or set DATABASE_URL to an existing server"
    )]
    NoBinaries,
    /// A command failed.
    #[error("`{command}` failed: {output}")]
    Command {
        /// The command line.
        command: String,
        /// What it printed.
        output: String,
    },
    /// Filesystem trouble.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// A running private cluster.
#[derive(Debug, Clone)]
pub struct LocalCluster {
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
    as_postgres: bool,
}

/// The database surfgym uses inside the cluster.
pub const DATABASE: &str = "surfgym";

fn is_root() -> bool {
    // The real uid is the first field of /proc/self/status's Uid line.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

/// Finds `pg_ctl` and `initdb`: `$PG_BIN_DIR`, the newest `/usr/lib/postgresql/*/bin`, PATH.
pub fn find_bin_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("PG_BIN_DIR") {
        return Some(PathBuf::from(d));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("pg_ctl").exists().then_some((v, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p).find(|d| d.join("pg_ctl").exists() && d.join("initdb").exists())
    })
}

impl LocalCluster {
    fn at(dir: &Path) -> Result<LocalCluster, ClusterError> {
        let bin = find_bin_dir().ok_or(ClusterError::NoBinaries)?;
        std::fs::create_dir_all(dir)?;
        Ok(LocalCluster {
            dir: dir.canonicalize()?,
            bin,
            port: 0,
            as_postgres: is_root(),
        })
    }

    /// The cluster in `dir` if a server is running on it.
    pub async fn running(dir: &Path) -> Result<Option<LocalCluster>, ClusterError> {
        if !dir.join("PG_VERSION").exists() {
            return Ok(None);
        }
        let mut cluster = LocalCluster::at(dir)?;
        Ok(cluster.running_port().await.map(|port| {
            cluster.port = port;
            cluster
        }))
    }

    /// Starts (or reuses) the cluster in `dir`, and makes sure the surfgym database exists.
    pub async fn ensure_started(dir: &Path) -> Result<LocalCluster, ClusterError> {
        let mut cluster = LocalCluster::at(dir)?;
        if !cluster.dir.join("PG_VERSION").exists() {
            cluster.initdb().await?;
        }
        if let Some(port) = cluster.running_port().await {
            cluster.port = port;
            tracing::info!(port, dir = %cluster.dir.display(), "reusing the running private Postgres");
        } else {
            cluster.port = free_port()?;
            cluster.start().await?;
        }
        cluster.create_database().await?;
        Ok(cluster)
    }

    /// The connection URL of the surfgym database.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{DATABASE}", self.port)
    }

    /// The cluster's data directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    fn command(&self, tool: &str) -> Command {
        let exe = self.bin.join(tool);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(exe);
            c
        } else {
            Command::new(exe)
        };
        // Run from a directory the postgres user can read, not the caller's.
        cmd.current_dir("/");
        cmd.stdin(Stdio::null());
        cmd
    }

    async fn run(&self, mut cmd: Command, what: &str) -> Result<String, ClusterError> {
        let out = cmd.output().await.map_err(|e| ClusterError::Command {
            command: what.to_string(),
            output: e.to_string(),
        })?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if out.status.success() {
            Ok(text)
        } else {
            Err(ClusterError::Command {
                command: what.to_string(),
                output: text.trim().to_string(),
            })
        }
    }

    async fn initdb(&self) -> Result<(), ClusterError> {
        if self.as_postgres {
            self.run(
                {
                    let mut c = Command::new("chown");
                    c.args(["-R", "postgres:postgres"]).arg(&self.dir);
                    c
                },
                "chown",
            )
            .await?;
        }
        let mut cmd = self.command("initdb");
        cmd.arg("-D").arg(&self.dir).args([
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        ]);
        self.run(cmd, "initdb").await?;
        tracing::info!(dir = %self.dir.display(), "initialised a private Postgres cluster");
        Ok(())
    }

    /// The port of a server already running on this directory, if any.
    async fn running_port(&self) -> Option<u16> {
        let mut cmd = self.command("pg_ctl");
        cmd.arg("-D").arg(&self.dir).arg("status");
        self.run(cmd, "pg_ctl status").await.ok()?;
        // postmaster.pid: line 4 is the port.
        let pid = std::fs::read_to_string(self.dir.join("postmaster.pid")).ok()?;
        pid.lines().nth(3)?.trim().parse().ok()
    }

    fn socket_dir(&self) -> PathBuf {
        // Unix socket paths are limited to ~107 bytes.
        if self.dir.as_os_str().len() < 80 {
            self.dir.clone()
        } else {
            PathBuf::from("/tmp")
        }
    }

    async fn start(&self) -> Result<(), ClusterError> {
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200",
            self.port,
            self.socket_dir().display()
        );
        let mut cmd = self.command("pg_ctl");
        cmd.arg("-D")
            .arg(&self.dir)
            .args(["-w", "-t", "60", "-l"])
            .arg(self.dir.join("server.log"))
            .args(["-o", &opts, "start"]);
        self.run(cmd, "pg_ctl start").await.map_err(|e| match e {
            ClusterError::Command { command, output } => {
                let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(8).collect();
                ClusterError::Command {
                    command,
                    output: format!(
                        "{output}\nserver.log: {}",
                        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                    ),
                }
            }
            other => other,
        })?;
        tracing::info!(port = self.port, "started a private Postgres");
        Ok(())
    }

    async fn create_database(&self) -> Result<(), ClusterError> {
        let mut cmd = self.command("psql");
        cmd.args([
            "-h",
            "127.0.0.1",
            "-p",
            &self.port.to_string(),
            "-U",
            "postgres",
            "-d",
            "postgres",
            "-tAc",
        ])
        .arg(format!(
            "SELECT 1 FROM pg_database WHERE datname = '{DATABASE}'"
        ));
        // psql lives beside pg_ctl in Debian's layout; fall back to createdb's exit status.
        let exists = match self.run(cmd, "psql").await {
            Ok(out) => out.trim() == "1",
            Err(_) => false,
        };
        if !exists {
            let mut cmd = self.command("createdb");
            cmd.args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
                DATABASE,
            ]);
            if let Err(e) = self.run(cmd, "createdb").await
                && !e.to_string().contains("already exists")
            {
                return Err(e);
            }
        }
        Ok(())
    }

    /// Stops the server (fast shutdown: running transactions are rolled back).
    pub async fn stop(&self) -> Result<(), ClusterError> {
        let mut cmd = self.command("pg_ctl");
        cmd.arg("-D")
            .arg(&self.dir)
            .args(["-m", "fast", "-w", "stop"]);
        self.run(cmd, "pg_ctl stop").await.map(|_| ())
    }
}

fn free_port() -> std::io::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}
