//! API tokens end to end: `surfgym token create|list|revoke` (the binary, against a real
//! database) and `surfgym serve` (a real server on loopback) honouring them: reads open,
//! writes only with a live token of scope write, `--no-auth` opening writes, and
//! `--no-auth` refused beyond loopback.

use crate::common;

use std::process::{Command, Output};

use common::database_url;
use serde_json::json;
use sqlx::PgPool;

fn surfgym(args: &[&str], database: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_surfgym"))
        .args(args)
        .env("DATABASE_URL", database)
        .env("SURFGYM_LOG", "warn")
        .output()
        .expect("the surfgym binary runs")
}

fn stdout(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A `surfgym serve` child on free ports, killed when dropped; `.1` is its API port.
pub(crate) struct Served(pub std::process::Child, pub u16);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `surfgym serve` (also the sessions test's server) (and `extra` options) on `database`, on free ports, and waits
/// for its address.
pub(crate) fn serve(database: &str, extra: &[&str]) -> Served {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_surfgym"))
        .args(["serve", "--port", "0", "--sites-port", "0"])
        .args(extra)
        .env("DATABASE_URL", database)
        .env("SURFGYM_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut served = Served(child, 0);
    loop {
        let line = rx
            .recv_timeout(std::time::Duration::from_secs(180))
            .expect("serve printed its address");
        if let Some(rest) = line.strip_prefix("dashboard and API: http://127.0.0.1:") {
            served.1 = rest.split('/').next().unwrap().parse().unwrap();
            return served;
        }
    }
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn tokens_from_the_cli_open_the_servers_writes_until_revoked(pool: PgPool) {
    let db = database_url(&pool);
    let secret = stdout(&surfgym(
        &["token", "create", "--scope", "write", "--name", "ci"],
        &db,
    ))
    .trim()
    .to_string();
    assert!(secret.starts_with("sgt_"), "{secret}");
    let bad = surfgym(&["token", "create", "--scope", "root"], &db);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("read, write or admin"));

    let listed = stdout(&surfgym(&["token", "list"], &db));
    assert!(
        listed.contains("ci") && listed.contains(&secret[..12]),
        "{listed}"
    );
    assert!(!listed.contains(&secret), "the list never shows a secret");
    let id = listed.split_whitespace().next().unwrap().to_string();

    let server = serve(&db, &[]);
    let api = format!("http://127.0.0.1:{}", server.1);
    let http = reqwest::Client::new();
    let new_task = |id: &str| {
        json!({
            "id": id, "site": "shop", "instruction": "Find the price of the blue mug",
            "start_url": "http://127.0.0.1:8701/",
            "rubric": {"groups": [{"facts": [{"check": {"type": "answer", "number": 12.5}}]}]}
        })
    };
    let resp = http.get(format!("{api}/api/tasks")).send().await.unwrap();
    assert_eq!(resp.status(), 200, "reads are open on loopback");
    let resp = http
        .post(format!("{api}/api/tasks"))
        .json(&new_task("a"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    assert!(
        resp.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Bearer")
    );
    let body = resp.text().await.unwrap();
    assert!(
        body.contains("surfgym token create --scope write"),
        "{body}"
    );
    let resp = http
        .post(format!("{api}/api/tasks"))
        .bearer_auth(&secret)
        .json(&new_task("a"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201, "{}", resp.text().await.unwrap());
    assert!(
        stdout(&surfgym(&["token", "list"], &db)).contains("last used 20"),
        "use is noted"
    );

    stdout(&surfgym(&["token", "revoke", &id], &db));
    assert!(stdout(&surfgym(&["token", "list"], &db)).contains("REVOKED"));
    let resp = http
        .post(format!("{api}/api/tasks"))
        .bearer_auth(&secret)
        .json(&new_task("b"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401, "a revoked token opens nothing");
    assert!(
        !surfgym(&["token", "revoke", "sgt_nothing"], &db)
            .status
            .success()
    );
    drop(server);

    // The local opt-out.
    let open = serve(&db, &["--no-auth"]);
    let resp = http
        .post(format!("http://127.0.0.1:{}/api/tasks", open.1))
        .json(&new_task("c"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201, "{}", resp.text().await.unwrap());
    drop(open);
    let refused = surfgym(
        &["serve", "--bind", "0.0.0.0", "--no-auth", "--port", "0"],
        &db,
    );
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--no-auth is refused"));

    let stored: Vec<(String,)> =
        sqlx::query_as("SELECT id FROM tasks WHERE id IN ('a', 'b', 'c') ORDER BY id")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(stored, vec![("a".to_string(),), ("c".to_string(),)]);
}
