//! Network faults (a reset, a cut body, a silent server, a redirect loop, a name that
//! does not resolve) end every episode within its timeout: as the agent's error
//! observation, or as an unscored start-page failure.

use crate::common;

use engine::CampaignSpec;
use sqlx::PgPool;
use store::{EpisodeFilter, TaskFilter};

use super::task;

/// A server of network faults: `/reset` drops the connection unanswered, `/truncated`
/// promises 10000 bytes and sends 20, `/slow` answers after a minute, `/loop` redirects
/// to itself; `/ok` is a page.
async fn faulty() -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let req = String::from_utf8_lossy(&buf[..n]).into_owned();
                let path = req.split_whitespace().nth(1).unwrap_or("/").to_string();
                let reply = match path.as_str() {
                    "/reset" => return,
                    "/truncated" => "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 10000\r\n\r\n<p>the first twenty".to_string(),
                    "/slow" => {
                        tokio::time::sleep(std::time::Duration::from_secs(60)).await;
                        return;
                    }
                    "/loop" => "HTTP/1.1 302 Found\r\nLocation: /loop\r\nContent-Length: 0\r\n\r\n".to_string(),
                    _ => {
                        let body = "<title>OK</title><p>fine</p>";
                        format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())
                    }
                };
                let _ = sock.write_all(reply.as_bytes()).await;
            });
        }
    });
    base
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn network_faults_end_every_episode_within_its_timeout(pool: PgPool) {
    let base = faulty().await;
    let (engine, _sites) = common::engine_observing(
        pool,
        vec![],
        engine::RunnerConfig::for_this_process(),
        |cfg| {
            cfg.contexts_per_browser = 8;
            cfg.navigation_timeout = std::time::Duration::from_secs(3);
        },
    )
    .await;
    let dns = "http://no-such-host.invalid/".to_string();
    let faults = [
        ("reset", format!("{base}/reset")),
        ("truncated", format!("{base}/truncated")),
        ("slow", format!("{base}/slow")),
        ("loop", format!("{base}/loop")),
        ("dns", dns.clone()),
    ];
    // The agent walks into each fault from a page that works; and each fault is a start
    // page too.
    for (name, url) in &faults {
        let go = format!("goto(\"{url}\")");
        task(
            &engine,
            &format!("to-{name}"),
            "Buy a mug.",
            format!("{base}/ok"),
            &[go.as_str(), "stop()"],
        )
        .await;
        task(
            &engine,
            &format!("at-{name}"),
            "Buy a mug.",
            url.clone(),
            &["stop()"],
        )
        .await;
    }
    let t0 = std::time::Instant::now();
    let id = engine
        .create_campaign(CampaignSpec {
            policy: Some("scripted".into()),
            tasks: Some(TaskFilter {
                site: Some("walls".into()),
                ..Default::default()
            }),
            max_attempts: Some(1),
            ..Default::default()
        })
        .await
        .unwrap();
    let status = tokio::time::timeout(std::time::Duration::from_secs(120), engine.run_campaign(id))
        .await
        .expect("no episode hangs")
        .unwrap();
    assert_eq!(status, store::Status::Completed);
    let (eps, _) = engine
        .store()
        .list_episodes(&EpisodeFilter::campaign(id), 100, 0)
        .await
        .unwrap();
    assert_eq!(eps.len(), 10);
    // What each fault is reported as; on a loaded machine a name lookup or twenty
    // redirects may also outlast the timeout, which is reported as such.
    let reported = |task: &str, error: &str| {
        let marker = match task.split_once('-').map(|(_, f)| f) {
            Some("reset") => "ERR_EMPTY_RESPONSE",
            Some("loop") => "ERR_TOO_MANY_REDIRECTS",
            Some("dns") => "ERR_NAME_NOT_RESOLVED",
            _ => "did not answer within 3s",
        };
        error.contains(marker) || error.contains("did not answer within 3s")
    };
    for e in &eps {
        let d = engine.store().get_episode(e.id).await.unwrap().unwrap();
        let t = e.task_id.as_str();
        if t.ends_with("truncated") {
            // A cut body renders what came: a page like any, the agent's to judge.
            assert_eq!(
                (e.success, e.last_error.as_deref()),
                (Some(false), None),
                "{t}"
            );
        } else if t.starts_with("to-") {
            // The agent's navigation failed; it saw why, and the episode went on.
            assert_eq!(e.success, Some(false), "{t}: {:?}", e.last_error);
            let error = d.steps[0].core.action_error.as_deref().unwrap_or("");
            assert!(reported(t, error), "{t}: {error}");
        } else {
            // A start page that never loads is the site's fault: not scored.
            assert_eq!(e.success, None, "{t}");
            let error = e.last_error.as_deref().unwrap_or("");
            assert!(
                error.starts_with("start_page") && reported(t, error),
                "{t}: {error}"
            );
        }
    }
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(60),
        "{:?}",
        t0.elapsed()
    );
    engine.shutdown().await;
}
