//! The `surfgym` binary itself: `tasks import --format ...` (MiniWoB++ task names and a
//! WebArena array with a broken item) against a real database, and `judge eval` on the
//! bundled labelled set with the rule judge.

use std::process::{Command, Output};

use sqlx::PgPool;

/// The URL of the test's own database (`#[sqlx::test]` makes one per test).
fn database_url(pool: &PgPool) -> String {
    let base = std::env::var("DATABASE_URL").expect("DATABASE_URL");
    let db = pool
        .connect_options()
        .get_database()
        .expect("a database name")
        .to_string();
    let (server, query) = match base.split_once('?') {
        Some((s, q)) => (s.to_string(), format!("?{q}")),
        None => (base.clone(), String::new()),
    };
    let server = match server.rfind('/') {
        Some(i) if server[..i].ends_with('/') => server,
        Some(i) => server[..i].to_string(),
        None => server,
    };
    format!("{server}/{db}{query}")
}

fn surfgym(args: &[&str], database: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_surfgym"))
        .args(args)
        .env("DATABASE_URL", database)
        .env("SURFGYM_LOG", "warn")
        .output()
        .expect("the surfgym binary runs")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[sqlx::test(migrator = "engine::store::MIGRATOR")]
async fn tasks_import_reads_public_formats_and_reports_bad_lines(pool: PgPool) {
    let db = database_url(&pool);
    let dir = std::env::temp_dir().join(format!("surfgym-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let suite = dir.join("miniwob.txt");
    std::fs::write(&suite, "click-test\nminiwob.enter-text\nnot a task\n").unwrap();
    let suite_arg = suite.to_str().unwrap();

    let out = surfgym(
        &[
            "tasks",
            "import",
            suite_arg,
            "--format",
            "miniwob",
            "--base",
            "MINIWOB=http://127.0.0.1:9/",
        ],
        &db,
    );
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "a rejected line fails the command");
    assert!(
        stdout.contains("imported 2 task(s), 1 line(s) rejected"),
        "{stdout}\n{stderr}"
    );
    assert!(
        stderr.contains(&format!("{suite_arg}:3: name:")),
        "the bad line, by number: {stderr}"
    );
    let ids: Vec<(String, String)> =
        sqlx::query_as("SELECT id, spec->>'start_url' FROM tasks ORDER BY id")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(
        ids,
        [
            (
                "miniwob.click-test".to_string(),
                "http://127.0.0.1:9/miniwob/click-test.html".to_string()
            ),
            (
                "miniwob.enter-text".to_string(),
                "http://127.0.0.1:9/miniwob/enter-text.html".to_string()
            )
        ]
    );

    let broken = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tasks/tests/fixtures/webarena_broken.json"
    );
    let out = surfgym(
        &[
            "tasks",
            "import",
            broken,
            "--format",
            "webarena",
            "--base",
            "GITLAB=http://gitlab.test:8023",
        ],
        &db,
    );
    let (stdout, stderr) = text(&out);
    assert!(
        stdout.contains("imported 2 task(s), 1 line(s) rejected"),
        "{stdout}\n{stderr}"
    );
    assert!(
        stderr.contains(&format!("{broken}:6: invalid JSON in the array at line 8")),
        "{stderr}"
    );
    let (n,): (i64,) = sqlx::query_as("SELECT count(*) FROM tasks WHERE id LIKE 'webarena.%'")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(n, 2);

    let out = surfgym(&["tasks", "import", broken, "--format", "csv"], &db);
    assert!(!out.status.success());
    assert!(
        text(&out).1.contains("unknown format `csv`"),
        "{:?}",
        text(&out)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn judge_eval_reports_the_rule_judge_right_on_the_bundled_set() {
    // Without a model judge, `judge eval` needs no database.
    let out = surfgym(&["judge", "eval"], "postgres://127.0.0.1:1/unused");
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("accuracy 100.0%  precision 100.0%  recall 100.0%"),
        "{stdout}"
    );
    for kind in ["answer", "element", "url", "page_text"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.trim_start().starts_with(kind) && l.trim_end().ends_with("100.0%")),
            "{kind} checks at 100%: {stdout}"
        );
    }
    assert!(!stdout.contains("wrong:"), "{stdout}");
}
