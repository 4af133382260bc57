//! A surfgym process killed outright leaves its Chromium running (Chromium does not notice
//! its parent's death); the next process to launch a browser kills it. Real processes:
//! the surfgym binary with a pool of its own, SIGKILL, then a pool launched here.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use browser_pool::{BrowserPool, PoolConfig};

/// The processes whose command line gives a profile of surfgym process `owner`.
fn browsers_of(owner: u32) -> Vec<u32> {
    let flag = format!(
        "--user-data-dir={}{owner}-",
        std::env::temp_dir().join("surfgym-chromium-").display()
    );
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|p| {
            let pid = p.file_name().to_str()?.parse::<u32>().ok()?;
            let cmdline = std::fs::read(p.path().join("cmdline")).ok()?;
            cmdline
                .split(|b| *b == 0)
                .any(|a| a.starts_with(flag.as_bytes()))
                .then_some(pid)
        })
        .collect()
}

fn running(pid: u32) -> bool {
    // A killed process may linger as a zombie until its new parent reaps it.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browsers_of_a_killed_process_are_killed_by_the_next_launch() {
    let _alone = crate::ALONE.lock().await;
    // `tasks audit` needs no database and keeps a pool busy for a minute or more.
    let mut surfgym = Command::new(env!("CARGO_BIN_EXE_surfgym"))
        .args(["tasks", "audit", "--suite", "bundled"])
        .env("SURFGYM_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let owner = surfgym.id();
    let started = Instant::now();
    let browsers = loop {
        let b = browsers_of(owner);
        if !b.is_empty() {
            break b;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "surfgym launched no browser"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    surfgym.kill().unwrap(); // SIGKILL: no chance to close anything
    surfgym.wait().unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        browsers.iter().any(|b| running(*b)),
        "the browser outlived the process that launched it: {browsers:?}"
    );
    assert!(!Path::new(&format!("/proc/{owner}")).exists() || !running(owner));

    let pool = BrowserPool::launch(PoolConfig::new(PoolConfig::default_chromium()))
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while browsers.iter().any(|b| running(*b)) {
        assert!(
            Instant::now() < deadline,
            "still running after the next launch: {:?}",
            browsers.iter().filter(|b| running(**b)).collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    pool.shutdown().await;
}
