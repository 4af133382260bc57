//! `pg-cluster`: a private PostgreSQL cluster under the project's data directory, for when no
//! `DATABASE_URL` is given: `initdb` once, `pg_ctl start` on a free loopback port, reuse it
//! while it runs. As root, the server runs as the `postgres` user (it refuses root).
//!
//! Every connection, over TCP (loopback only) or the Unix socket, authenticates with
//! SCRAM: the superuser's password is a secret generated at `initdb` and kept in the
//! cluster's directory (`surfgym-password`, mode 0600), and the URL carries it. A cluster
//! made by an earlier surfgym (which trusted every local user) is converted on first use.
//!
//! Process management only: it knows nothing of surfgym's schema or data (that is
//! `store`'s); the CLI (`surfgym db start|stop`, the private database) is its user.

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
    /// The cluster demands a password whose file is gone.
    #[error(
        "the private Postgres in {dir} requires a password, but its secret file {file} is missing: \
         restore that file, or stop the cluster (`surfgym db stop`) and delete {dir} to start \
         afresh (its data is lost)"
    )]
    NoSecret {
        /// The cluster's directory.
        dir: String,
        /// Where the secret should be.
        file: String,
    },
    /// Filesystem trouble.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Where a cluster keeps its superuser's password (inside its directory, so that it goes
/// with the cluster).
pub const SECRET_FILE: &str = "surfgym-password";

/// The superuser's password: printed only inside the URL, never in `Debug`.
#[derive(Clone)]
struct Secret(String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl Secret {
    /// 32 random bytes from a generator fit for keys (seeded by the operating system),
    /// hex-encoded (nothing to escape in a URL).
    fn generate() -> Secret {
        use rand::Rng;
        let bytes: [u8; 32] = rand::rng().random();
        Secret(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }
}

/// A running private cluster.
#[derive(Debug, Clone)]
pub struct LocalCluster {
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
    as_postgres: bool,
    secret: Option<Secret>,
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
            secret: None,
        })
    }

    fn secret_path(&self) -> PathBuf {
        self.dir.join(SECRET_FILE)
    }

    fn read_secret(&self) -> Result<Option<Secret>, ClusterError> {
        match std::fs::read_to_string(self.secret_path()) {
            Ok(s) if !s.trim().is_empty() => Ok(Some(Secret(s.trim().to_string()))),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Writes the secret where the cluster keeps it.
    fn write_secret(&self, secret: &Secret) -> Result<(), ClusterError> {
        let tmp = self.dir.join(format!("{SECRET_FILE}.tmp"));
        let _ = std::fs::remove_file(&tmp);
        self.write_private(&tmp, secret)?;
        std::fs::rename(&tmp, self.secret_path())?;
        Ok(())
    }

    /// Writes the secret to a new file readable by its owner only from the start.
    fn write_private(&self, path: &Path, secret: &Secret) -> Result<(), ClusterError> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)?;
        f.write_all(format!("{}\n", secret.0).as_bytes())?;
        f.sync_all()?;
        Ok(())
    }

    /// Whether pg_hba.conf lets anyone in without a password (a cluster made before
    /// passwords, or one whose conversion was interrupted).
    fn trusts(&self) -> Result<bool, ClusterError> {
        let hba = std::fs::read_to_string(self.dir.join("pg_hba.conf"))?;
        Ok(hba_lines(&hba).any(|fields| fields.last() == Some(&"trust")))
    }

    /// The cluster in `dir` if a server is running on it.
    pub async fn running(dir: &Path) -> Result<Option<LocalCluster>, ClusterError> {
        if !dir.join("PG_VERSION").exists() {
            return Ok(None);
        }
        let mut cluster = LocalCluster::at(dir)?;
        cluster.secret = cluster.read_secret()?;
        Ok(cluster.running_port().await.map(|port| {
            cluster.port = port;
            cluster
        }))
    }

    /// Starts (or reuses) the cluster in `dir`, and makes sure the surfgym database exists.
    /// A cluster that still trusts local users is given a password first.
    pub async fn ensure_started(dir: &Path) -> Result<LocalCluster, ClusterError> {
        let mut cluster = LocalCluster::at(dir)?;
        if !cluster.dir.join("PG_VERSION").exists() {
            let secret = Secret::generate();
            cluster.initdb(&secret).await?;
            cluster.write_secret(&secret)?;
        }
        cluster.secret = cluster.read_secret()?;
        let trusts = cluster.trusts()?;
        if !trusts && cluster.secret.is_none() {
            return Err(ClusterError::NoSecret {
                dir: cluster.dir.display().to_string(),
                file: cluster.secret_path().display().to_string(),
            });
        }
        if let Some(port) = cluster.running_port().await {
            cluster.port = port;
            tracing::info!(port, dir = %cluster.dir.display(), "reusing the running private Postgres");
        } else {
            cluster.port = free_port()?;
            cluster.start().await?;
        }
        if trusts {
            cluster.require_password().await?;
        }
        cluster.create_database().await?;
        Ok(cluster)
    }

    /// Converts a cluster made by an earlier surfgym: sets the superuser's password (the
    /// cluster still trusts us), keeps it in the secret file, then makes every line of
    /// pg_hba.conf ask for it and reloads. Each step can be redone if interrupted.
    async fn require_password(&mut self) -> Result<(), ClusterError> {
        let secret = match self.secret.clone() {
            Some(s) => s,
            None => Secret::generate(),
        };
        // Over the (still trusted) connection rather than on a psql command line, which
        // every local user could read; hex digits only, nothing to quote.
        let trusted = format!("postgres://postgres@127.0.0.1:{}/postgres", self.port);
        let set = async {
            use sqlx::Connection;
            let mut db = sqlx::PgConnection::connect(&trusted).await?;
            sqlx::raw_sql(&format!(
                "SET password_encryption = 'scram-sha-256'; ALTER ROLE postgres PASSWORD '{}'",
                secret.0
            ))
            .execute(&mut db)
            .await?;
            db.close().await
        };
        set.await.map_err(|e| ClusterError::Command {
            command: "ALTER ROLE postgres PASSWORD".into(),
            output: e.to_string(),
        })?;
        self.write_secret(&secret)?;
        self.secret = Some(secret);
        let path = self.dir.join("pg_hba.conf");
        let hba = std::fs::read_to_string(&path)?;
        std::fs::write(&path, require_scram(&hba))?;
        let mut cmd = self.command("pg_ctl");
        cmd.arg("-D").arg(&self.dir).arg("reload");
        self.run(cmd, "pg_ctl reload").await?;
        tracing::warn!(
            dir = %self.dir.display(),
            "the private Postgres trusted every local user: it now requires a password (kept in {SECRET_FILE}); \
             clients given its old URL need the new one (`surfgym db start` prints it)"
        );
        Ok(())
    }

    /// The connection URL of the surfgym database.
    pub fn url(&self) -> String {
        match &self.secret {
            Some(s) => format!(
                "postgres://postgres:{}@127.0.0.1:{}/{DATABASE}",
                s.0, self.port
            ),
            None => format!("postgres://postgres@127.0.0.1:{}/{DATABASE}", self.port),
        }
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
            let mut c = Command::new(runuser());
            c.args(["-u", "postgres", "--"]).arg(exe);
            c
        } else {
            Command::new(exe)
        };
        // Run from a directory the postgres user can read, not the caller's.
        cmd.current_dir("/");
        cmd.stdin(Stdio::null());
        if let Some(s) = &self.secret {
            cmd.env("PGPASSWORD", &s.0);
        }
        cmd
    }

    /// `psql` on loopback as the superuser, one command (`-c` follows).
    fn psql(&self, database: &str) -> Command {
        let mut cmd = self.command("psql");
        cmd.args([
            "-h",
            "127.0.0.1",
            "-p",
            &self.port.to_string(),
            "-U",
            "postgres",
            "-d",
            database,
            "-v",
            "ON_ERROR_STOP=1",
            "-tAc",
        ]);
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

    async fn initdb(&self, secret: &Secret) -> Result<(), ClusterError> {
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
        // initdb reads the password from a file, and wants its directory empty: a file of
        // the server's user beside it, removed as soon as initdb has read it.
        let pwfile = self.dir.with_extension("initdb-password");
        let _ = std::fs::remove_file(&pwfile);
        self.write_private(&pwfile, secret)?;
        if self.as_postgres {
            let mut c = Command::new("chown");
            c.arg("postgres:postgres").arg(&pwfile);
            self.run(c, "chown").await?;
        }
        let mut cmd = self.command("initdb");
        cmd.arg("-D").arg(&self.dir).args([
            "-U",
            "postgres",
            "-A",
            "scram-sha-256",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        ]);
        cmd.arg(format!("--pwfile={}", pwfile.display()));
        let done = self.run(cmd, "initdb").await;
        let _ = std::fs::remove_file(&pwfile);
        done?;
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
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c unix_socket_permissions=0700 -c password_encryption=scram-sha-256 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200",
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
        let mut cmd = self.psql("postgres");
        cmd.arg(format!(
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

/// pg_hba.conf's rules, each as its fields (comments and blank lines left out).
fn hba_lines(hba: &str) -> impl Iterator<Item = Vec<&str>> {
    hba.lines()
        .map(|l| l.split('#').next().unwrap_or_default())
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|f| !f.is_empty())
}

/// pg_hba.conf with every `trust` rule asking for a SCRAM password instead.
fn require_scram(hba: &str) -> String {
    let mut out = String::new();
    for line in hba.lines() {
        let rule = line.split('#').next().unwrap_or_default();
        if rule.split_whitespace().last() == Some("trust") {
            let at = rule.rfind("trust").unwrap_or(rule.len());
            out.push_str(&format!("{}scram-sha-256{}", &line[..at], &line[at + 5..]));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

fn free_port() -> std::io::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// `runuser` (util-linux): on the PATH, else where Debian and others keep it, since a
/// PATH without the sbin folders (a non-login shell, `env -i`) is common.
fn runuser() -> PathBuf {
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("runuser"));
    on_path
        .chain(["/usr/sbin/runuser", "/sbin/runuser"].map(PathBuf::from))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("runuser"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_rules_become_scram_and_the_rest_stays() {
        let hba = "# TYPE DATABASE USER ADDRESS METHOD\nlocal all all trust\nhost all all 127.0.0.1/32 trust # ipv4\nhost all all ::1/128 md5\n";
        let out = require_scram(hba);
        assert_eq!(
            out,
            "# TYPE DATABASE USER ADDRESS METHOD\nlocal all all scram-sha-256\nhost all all 127.0.0.1/32 scram-sha-256 # ipv4\nhost all all ::1/128 md5\n"
        );
        assert!(hba_lines(hba).any(|f| f.last() == Some(&"trust")));
        assert!(!hba_lines(&out).any(|f| f.last() == Some(&"trust")));
        let a = Secret::generate().0;
        assert_eq!(a.len(), 64);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(a, Secret::generate().0);
    }
}
