//! The private Postgres cluster with real `initdb` and `pg_ctl`: it listens on loopback
//! only and asks every client for its generated password (kept in its directory, mode
//! 0600, carried by its URL); a cluster made before passwords is converted and keeps its
//! data; a lost secret file is an error that says what to do.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use pg_cluster::{ClusterError, LocalCluster, SECRET_FILE, find_bin_dir};
use sqlx::{Connection, PgConnection};

/// Stops the cluster in its directory however the test ends.
struct StopOnDrop(PathBuf);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let Some(bin) = find_bin_dir() else { return };
        let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
        let mut cmd = if root {
            let mut c = std::process::Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(bin.join("pg_ctl"));
            c
        } else {
            std::process::Command::new(bin.join("pg_ctl"))
        };
        let _ = cmd
            .arg("-D")
            .arg(&self.0)
            .args(["-m", "immediate", "-w", "stop"])
            .output();
    }
}

async fn connects(url: &str) -> bool {
    PgConnection::connect(url).await.is_ok()
}

fn password_of(url: &str) -> &str {
    let creds = url
        .strip_prefix("postgres://postgres:")
        .expect("the URL carries a password");
    creds.split_once('@').unwrap().0
}

fn without_password(url: &str) -> String {
    url.replace(&format!(":{}@", password_of(url)), "@")
}

fn set_hba(dir: &Path, from: &str, to: &str) {
    let path = dir.join("pg_hba.conf");
    let hba = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, hba.replace(from, to)).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_private_cluster_asks_everyone_for_its_generated_password() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    // The server runs as `postgres` under root: it must be able to reach its directory.
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let dir = tmp.path().join("pg");
    let _stop = StopOnDrop(dir.clone());

    let cluster = LocalCluster::ensure_started(&dir).await.unwrap();
    let url = cluster.url();
    let secret = password_of(&url).to_string();
    assert_eq!(secret.len(), 64, "{url}");
    let file = cluster.dir().join(SECRET_FILE);
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), secret);
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the secret file is its owner's only");
    assert!(
        !format!("{cluster:?}").contains(&secret),
        "Debug shows the secret"
    );

    let mut db = PgConnection::connect(&url).await.unwrap();
    let (listen,): (String,) = sqlx::query_as("SHOW listen_addresses")
        .fetch_one(&mut db)
        .await
        .unwrap();
    assert_eq!(listen, "127.0.0.1");
    let (scram,): (bool,) = sqlx::query_as(
        "SELECT rolpassword LIKE 'SCRAM-SHA-256$%' FROM pg_authid WHERE rolname = 'postgres'",
    )
    .fetch_one(&mut db)
    .await
    .unwrap();
    assert!(scram);
    sqlx::raw_sql("CREATE TABLE kept (x int); INSERT INTO kept VALUES (7)")
        .execute(&mut db)
        .await
        .unwrap();
    db.close().await.unwrap();
    assert!(
        !connects(&without_password(&url)).await,
        "no password, yet let in"
    );
    assert!(
        !connects(&url.replace(&secret, &"0".repeat(64))).await,
        "a wrong password, yet let in"
    );
    // Reused while it runs: the same URL.
    assert_eq!(LocalCluster::ensure_started(&dir).await.unwrap().url(), url);

    // A cluster from before passwords: trusts everyone, no secret file.
    cluster.stop().await.unwrap();
    std::fs::remove_file(&file).unwrap();
    set_hba(&dir, "scram-sha-256", "trust");
    let cluster = LocalCluster::ensure_started(&dir).await.unwrap();
    let url = cluster.url();
    assert_ne!(password_of(&url), secret, "a new secret");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap().trim(),
        password_of(&url)
    );
    assert!(
        !connects(&without_password(&url)).await,
        "still trusts everyone after conversion"
    );
    let mut db = PgConnection::connect(&url).await.unwrap();
    let (x,): (i32,) = sqlx::query_as("SELECT x FROM kept")
        .fetch_one(&mut db)
        .await
        .unwrap();
    assert_eq!(x, 7, "the converted cluster keeps its data");
    db.close().await.unwrap();

    // The secret file lost: a clear error, not a mysterious authentication failure.
    std::fs::remove_file(&file).unwrap();
    let err = LocalCluster::ensure_started(&dir).await.unwrap_err();
    assert!(matches!(err, ClusterError::NoSecret { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains(SECRET_FILE) && msg.contains("surfgym db stop"),
        "{msg}"
    );
    cluster.stop().await.unwrap();
}
