//! The `surfgym` binary itself: `tasks import --format ...` (MiniWoB++ task names and a
//! WebArena array with a broken item) against a real database, `judge eval` on the
//! bundled labelled set with the rule judge, `observe` on a page with a cross-site frame
//! in real Chromium, `export` of a real scripted episode with its screenshots (and every
//! printing command into a closed pipe), `har import`, `list` and `export` of a recording,
//! and a short `bench soak` over every hostile page.

use crate::common;

use std::process::{Command, Output};

use common::database_url;
use sqlx::PgPool;

fn surfgym(args: &[&str], database: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_surfgym"))
        .args(args)
        .env("DATABASE_URL", database)
        .env("SURFGYM_LOG", "warn")
        .output()
        .expect("the surfgym binary runs")
}

fn json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[sqlx::test(migrator = "store::MIGRATOR")]
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

/// WebArena's `config_files/` as published: a directory of pretty-printed objects, one per
/// file, imported into the split asked for, with a warning for each task that expects a
/// login.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn tasks_import_reads_a_directory_of_config_files(pool: PgPool) {
    let db = database_url(&pool);
    let dir = std::env::temp_dir().join(format!("surfgym-cli-dir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (id, login) in [(10, true), (2, false)] {
        let config = serde_json::json!({
            "sites": ["gitlab"], "task_id": id, "require_login": login,
            "storage_state": if login { "./.auth/gitlab_state.json" } else { "" },
            "start_url": "__GITLAB__", "intent": format!("Open page {id}"),
            "eval": {"eval_types": ["url_match"], "reference_url": format!("__GITLAB__/p/{id}")}
        });
        std::fs::write(
            dir.join(format!("{id}.json")),
            serde_json::to_string_pretty(&config).unwrap(),
        )
        .unwrap();
    }
    let path = dir.to_str().unwrap();
    let out = surfgym(
        &[
            "tasks",
            "import",
            path,
            "--format",
            "webarena",
            "--base",
            "GITLAB=http://gitlab.test:8023",
            "--split",
            "train",
        ],
        &db,
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("imported 2 task(s), 0 line(s) rejected, 1 imported with warnings"),
        "{stdout}"
    );
    assert!(
        stderr.contains("10.json:1: warning: require_login:"),
        "{stderr}"
    );
    let rows: Vec<(String, String)> = sqlx::query_as("SELECT id, split FROM tasks ORDER BY id")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(
        rows,
        [
            ("webarena.10".to_string(), "train".to_string()),
            ("webarena.2".to_string(), "train".to_string())
        ]
    );
    let out = surfgym(&["tasks", "import", path, "--split", "dev"], &db);
    assert!(!out.status.success());
    assert!(
        text(&out).1.contains("use train or test"),
        "{:?}",
        text(&out)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn judge_eval_reports_the_rule_judge_right_on_the_bundled_set() {
    // Without a model judge, `judge eval` needs no database. The recorded set (reference
    // runs plus known-effect mutations); the set by construction is tests/it/rewards.rs'.
    let set = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/rubrics/calibration/bundled.jsonl"
    );
    let out = surfgym(
        &["judge", "eval", "--set", set, "--expand"],
        "postgres://127.0.0.1:1/unused",
    );
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

#[test]
fn judge_eval_and_tasks_audit_run_a_task_by_construction() {
    let db = "postgres://127.0.0.1:1/unused";
    let task = ["--suite", "bundled", "--task", "shop-remove-notebooks"];
    let out = surfgym(&[&["judge", "eval"][..], &task].concat(), db);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // js: labels of both classes (true, false columns), every verdict right.
    let js: Vec<usize> = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("js "))
        .unwrap_or_else(|| panic!("no js row: {stdout}"))
        .split_whitespace()
        .skip(1)
        .take(3)
        .map(|n| n.parse().unwrap())
        .collect();
    assert!(js[1] > 0 && js[2] > 0 && js[0] == js[1] + js[2], "{stdout}");
    let out = surfgym(&[&["tasks", "audit"][..], &task].concat(), db);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("audited 1 task(s)") && stdout.contains(" 0 open"),
        "{stdout}"
    );
}

#[test]
fn judge_record_random_writes_the_bundled_episode_again_for_review() {
    let dir = std::env::temp_dir().join(format!("surfgym-review-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (out_file, sheet) = (dir.join("random.jsonl"), dir.join("sheet.md"));
    // The bundled review recorded this task as the 15th episode: seed 15.
    let args = [
        "judge",
        "record-random",
        "--task",
        "shop-mug-capacity",
        "--seed",
        "15",
        "--out",
        out_file.to_str().unwrap(),
        "--sheet",
        sheet.to_str().unwrap(),
    ];
    let db = "postgres://127.0.0.1:1/unused";
    let out = surfgym(&args, db);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let written = std::fs::read_to_string(&out_file).unwrap();
    let lines = json_lines(&written);
    assert_eq!(lines.len(), 1);
    let e = &lines[0];
    assert_eq!(e["task"], "shop-mug-capacity");
    assert_eq!(
        e["labels"],
        serde_json::json!({"capacity": null, "visited": null})
    );
    let bundled = tasks::reviewed::bundled_reviewed()
        .into_iter()
        .map(|l| l.spec.unwrap())
        .find(|s| s.task == "shop-mug-capacity")
        .unwrap();
    assert_eq!(bundled.seed, 15);
    assert_eq!(e["actions"], serde_json::json!(bundled.actions));
    assert_eq!(e["visited"], serde_json::json!(bundled.visited));
    let sheet_text = std::fs::read_to_string(&sheet).unwrap();
    assert!(
        sheet_text.contains("## shop-mug-capacity/random-seed-15")
            && sheet_text.contains("- capacity (answer): answer gives 350 ml"),
        "{sheet_text}"
    );
    // A file that may hold reviewed labels is never overwritten.
    let again = surfgym(&args, db);
    assert!(!again.status.success());
    assert!(
        text(&again).1.contains("already exists"),
        "{:?}",
        text(&again)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_browser_options_are_refused_before_anything_runs() {
    for (flag, value, named) in [
        ("--max-tabs", "0", "max_tabs must be at least 1"),
        (
            "--navigation-timeout-ms",
            "0",
            "navigation_timeout must be at least 100 ms",
        ),
    ] {
        // No database behind this address: refused before one is needed.
        let out = surfgym(
            &["run", flag, value, "--policy", "scripted"],
            "postgres://127.0.0.1:1/unused",
        );
        let (stdout, stderr) = text(&out);
        assert!(!out.status.success(), "{flag} {value}: {stdout}");
        assert!(stderr.contains(named), "{flag} {value}: {stderr}");
    }
}

/// A page whose form sits in a cross-site frame (`localhost` beside `127.0.0.1`).
const FRAMED_FORM: &str = r#"<!doctype html><html><head><title>Framed form</title></head><body>
<button onclick="this.textContent = 'top clicked'">Top button</button>
<script>
  const f = document.createElement('iframe');
  f.src = location.href.replace('127.0.0.1', 'localhost').replace('index.html', 'form.html');
  f.style = 'width: 400px; height: 150px';
  document.body.appendChild(f);
</script>
<button style="position: absolute; top: 2000px">Far below</button></body></html>"#;

const FORM: &str = r#"<!doctype html><html><head><title>Form</title></head><body>
<input aria-label="Email" id="email">
<button onclick="this.textContent = 'sent to ' + document.getElementById('email').value">Send</button>
</body></html>"#;

const SPINNER: &str = r#"<!doctype html><html><head><title>Spinner</title><style>
  @keyframes spin { to { transform: rotate(360deg); } }
  div { width: 30px; height: 30px; background: #36c; animation: spin 1s linear infinite; }
</style></head><body><div></div></body></html>"#;

const CANVAS: &str = r#"<!doctype html><html><head><title>Canvas</title></head><body>
<canvas id="c" width="100" height="100"></canvas><script>
  const g = document.getElementById('c').getContext('2d');
  const tick = (t) => { g.fillStyle = `hsl(${t % 360}, 80%, 50%)`; g.fillRect(0, 0, 100, 100); requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
</script></body></html>"#;

/// The start of the pool's warning about endless animations without the frame-rate limit.
const ENDLESS: &str = "a page keeps an animation running";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observe_shows_what_the_agent_sees_after_the_actions() {
    let dir = std::env::temp_dir().join(format!("surfgym-observe-{}", std::process::id()));
    let site = dir.join("site");
    std::fs::create_dir_all(&site).unwrap();
    std::fs::write(site.join("index.html"), FRAMED_FORM).unwrap();
    std::fs::write(site.join("form.html"), FORM).unwrap();
    std::fs::write(site.join("spinner.html"), SPINNER).unwrap();
    std::fs::write(site.join("canvas.html"), CANVAS).unwrap();
    let sites = engine::SitesServer::start_with(
        std::net::IpAddr::from([127, 0, 0, 1]),
        None,
        vec![("framed".into(), site.clone())],
    )
    .await
    .unwrap();
    let page = format!("{}/index.html", sites.bases()["framed"]);
    let out_dir = dir.join("out");
    let run = |args: Vec<String>| {
        tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            surfgym(&args, "postgres://127.0.0.1:1/unused")
        })
    };

    // The frame's controls are numbered after the top button, where the frame sits.
    let out = run(vec!["observe".into(), page.clone()]).await.unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("Title: \"Framed form\""), "{stdout}");
    assert!(stdout.contains("[1] button \"Top button\""), "{stdout}");
    assert!(stdout.contains("[2] textbox \"Email\""), "{stdout}");
    assert!(stdout.contains("[3] button \"Send\""), "{stdout}");
    assert!(stdout.contains("1 more outside the viewport"), "{stdout}");

    // Actions run in order; the final observation and files show their effect.
    let out = run(vec![
        "observe".into(),
        page.clone(),
        "--act".into(),
        r#"type(2, "ada@example.com")"#.into(),
        "--act".into(),
        "click(3)".into(),
        "--all".into(),
        "--out".into(),
        out_dir.display().to_string(),
    ])
    .await
    .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("click(3): done"), "{stderr}");
    assert!(
        stdout.contains("[3] button \"sent to ada@example.com\""),
        "{stdout}"
    );
    assert!(stdout.contains("[4] button \"Far below\" at ("), "{stdout}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("observation.json")).unwrap())
            .unwrap();
    assert_eq!(json["elements"][1]["value"], "ada@example.com");
    for shot in ["screenshot.jpg", "marks.jpg"] {
        let bytes = std::fs::read(out_dir.join(shot)).unwrap();
        assert_eq!(&bytes[..2], &[0xFF, 0xD8], "{shot} is a JPEG");
    }

    // A failed action fails the command and says why; a bad one is refused up front.
    let observe = |extra: &[&str]| {
        let mut args = vec!["observe".to_string()];
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };
    let fails_saying = |args: Vec<String>, says: &'static str| {
        let out = run(args);
        async move {
            let out = out.await.unwrap();
            assert!(!out.status.success(), "{:?}", text(&out));
            assert!(text(&out).1.contains(says), "{says:?} in {:?}", text(&out));
            out
        }
    };
    fails_saying(
        observe(&[&page, "--act", "click(40)"]),
        "click(40): failed: element 40 is not on the page",
    )
    .await;
    fails_saying(
        observe(&[&page, "--act", "clik(1)"]),
        "--act #1 \"clik(1)\" is not an action",
    )
    .await;
    let out = fails_saying(observe(&["file:///etc/passwd"]), "only http and https").await;
    assert!(
        !text(&out).1.contains(ENDLESS),
        "no warning without animations"
    );

    // A page that never stops animating (a CSS spinner; a canvas redrawn every frame for
    // more than a second) is warned about, unless the frame-rate limit is kept.
    let base = sites.bases()["framed"].clone();
    for (page, extra) in [
        ("spinner.html", vec![]),
        ("canvas.html", vec!["--act", "wait(1500)"]),
    ] {
        let mut args: Vec<String> = vec!["observe".into(), format!("{base}/{page}")];
        args.extend(extra.iter().map(|s| s.to_string()));
        let out = run(args.clone()).await.unwrap();
        assert!(out.status.success(), "{:?}", text(&out));
        assert!(text(&out).1.contains(ENDLESS), "{page}: {:?}", text(&out));
        args.push("--frame-rate-limit".into());
        let out = run(args).await.unwrap();
        assert!(out.status.success(), "{:?}", text(&out));
        assert!(!text(&out).1.contains(ENDLESS), "{page}: {:?}", text(&out));
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn export_writes_finished_episodes_and_their_screenshots(pool: PgPool) {
    let db = database_url(&pool);
    let ran = surfgym(
        &[
            "run",
            "--policy",
            "scripted",
            "--task",
            "shop-mug-capacity",
            "--rollouts",
            "1",
            "--sites-port",
            "0",
            "--viewport",
            "800x600",
        ],
        &db,
    );
    assert!(ran.status.success(), "{:?}", text(&ran));
    // `run` records the screen it rendered at with the campaign, for workers that join it.
    let config: serde_json::Value = sqlx::query_scalar("SELECT config FROM campaigns")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(config["screen"]["width"], 800, "{config}");
    assert_eq!(config["screen"]["height"], 600, "{config}");

    let dir = std::env::temp_dir().join(format!("surfgym-export-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let file = dir.join("episodes.jsonl");
    let shots = dir.join("shots");
    std::fs::create_dir_all(&dir).unwrap();
    let out = surfgym(
        &[
            "export",
            "--out",
            file.to_str().unwrap(),
            "--screenshots",
            shots.to_str().unwrap(),
        ],
        &db,
    );
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("wrote 1 episodes"), "{stderr}");
    let written = std::fs::read_to_string(&file).unwrap();
    let lines = json_lines(&written);
    assert_eq!(lines.len(), 1);
    let e = &lines[0];
    assert_eq!(e["task_id"], "shop-mug-capacity");
    assert_eq!(e["split"], "train");
    assert_eq!(e["success"], true);
    let steps = e["steps"].as_array().unwrap();
    assert_eq!(steps.len() as i64, e["step_count"].as_i64().unwrap());
    assert!(steps.len() >= 3, "the reference solution's steps: {e}");
    for step in steps.iter().chain(std::iter::once(e)) {
        let key = if step.get("idx").is_some() {
            "screenshot_file"
        } else {
            "final_screenshot_file"
        };
        let path = step[key]
            .as_str()
            .unwrap_or_else(|| panic!("{key} in {step}"));
        let bytes = std::fs::read(path).unwrap();
        assert_eq!(&bytes[..2], [0xFF, 0xD8], "{path} is a JPEG");
        let img = image::load_from_memory(&bytes).unwrap();
        assert_eq!(
            (img.width(), img.height()),
            (800, 600),
            "{path}: --viewport"
        );
    }

    // To standard output, without screenshots: the same episodes, hashes only.
    let out = surfgym(&["export", "--success", "true"], &db);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let again: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(again["id"], e["id"]);
    assert!(again["steps"][0].get("screenshot_file").is_none());
    let none = surfgym(&["export", "--success", "false"], &db);
    assert!(none.status.success());
    assert!(none.stdout.is_empty(), "no unsuccessful episode to export");

    let bad = surfgym(&["export", "--campaign", "xyz"], &db);
    let (_, stderr) = text(&bad);
    assert!(!bad.status.success());
    assert!(stderr.contains("--campaign xyz"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();

    // Piped into a reader that stopped reading (`surfgym campaign list | head -1`), every
    // printing command ends quietly with status 0.
    let campaign = e["campaign_id"].as_str().unwrap();
    for args in [
        vec!["campaign", "list"],
        vec!["campaign", "show", campaign],
        vec!["export"],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_surfgym"))
            .args(&args)
            .env("DATABASE_URL", &db)
            .env("SURFGYM_LOG", "warn")
            .stdout(writer)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{args:?} into a closed pipe: {stderr}"
        );
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{args:?}: {stderr}"
        );
    }
}

/// `run` with a model policy says which model its episodes ran under (name, model
/// directory, the start of the files' fingerprint, sampling), and the export carries the
/// full card.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn run_names_the_model_its_episodes_ran_under(pool: PgPool) {
    let db = database_url(&pool);
    let data = std::path::PathBuf::from(
        std::env::var("SURFGYM_DATA_DIR")
            .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/.surfgym").into()),
    );
    let model = data.join("models/tiny-vlm");
    let fingerprint = policy::fingerprint(&model).unwrap();
    let ran = surfgym(
        &[
            "run",
            "--policy",
            "onnx",
            "--onnx-model",
            model.to_str().unwrap(),
            "--max-new-tokens",
            "8",
            "--task",
            "shop-mug-capacity",
            "--rollouts",
            "1",
            "--max-steps",
            "2",
            "--sites-port",
            "0",
        ],
        &db,
    );
    let (stdout, stderr) = text(&ran);
    assert!(ran.status.success(), "{stderr}");
    let want = format!(
        "ran under onnx · tiny-vlm · {} · greedy (1 episodes)",
        &fingerprint["sha256:".len()..][..12]
    );
    assert!(stdout.contains(&want), "{want}\n{stdout}");
    let out = surfgym(&["export"], &db);
    let (exported, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let line: serde_json::Value = serde_json::from_str(exported.lines().next().unwrap()).unwrap();
    assert_eq!(line["policy"]["fingerprint"], fingerprint.as_str());
    assert_eq!(line["policy"]["sampling"]["max_tokens"], 8);
}

/// The soak's hostile pages but the two that keep navigating themselves (a `goto` away
/// from those can still be overtaken by their next hop, docs/benchmarks/soak.md: measured there).
const STEADY_HOSTILE: [&str; 11] = [
    "alerts",
    "popups",
    "spin",
    "download",
    "local-file",
    "tampered",
    "hung-image",
    "huge-title",
    "redirects",
    "print",
    "permissions",
];

/// `bench soak`: each hostile page once, ordinary episodes between them; the command
/// checks that the pool handled each as documented and the session stayed usable, and
/// exits non-zero when any episode failed.
#[test]
fn the_soak_benchmark_meets_every_hostile_page_and_none_fails() {
    let kinds = STEADY_HOSTILE.join(",");
    let out = surfgym(
        &[
            "bench",
            "soak",
            "--episodes",
            "22",
            "--contexts",
            "2",
            "--hostile-every",
            "2",
            "--hostile",
            &kinds,
            "--sample-every",
            "11",
        ],
        "postgres://127.0.0.1:1/unused",
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for kind in STEADY_HOSTILE {
        assert!(
            stdout.contains(&format!("| hostile: {kind} | 1 | 0 |")),
            "{kind}: {stdout}"
        );
    }
    assert!(stdout.contains("| idle, after |"), "{stdout}");
}

/// `har import` takes a HAR file as a recording campaigns can replay, `har list` shows it,
/// `har export` writes it back with the same exchanges; a HAR that cannot be replayed is
/// refused naming the entry and field.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn har_import_list_and_export_round_trip_a_recording(pool: PgPool) {
    let db = database_url(&pool);
    let dir = tempfile::tempdir().unwrap();
    let har = serde_json::json!({"log": {"version": "1.2", "creator": {"name": "Playwright", "version": "1"},
        "entries": [
            {"request": {"method": "GET", "url": "http://docs.har.test/", "headers": []},
             "response": {"status": 200, "statusText": "OK",
                "headers": [{"name": "Content-Type", "value": "text/html"}],
                "content": {"mimeType": "text/html", "text": "<p>hello</p>"}}},
            {"request": {"method": "GET", "url": "http://docs.har.test/dot.png", "headers": []},
             "response": {"status": 200, "headers": [{"name": "Content-Type", "value": "image/png"}],
                "content": {"mimeType": "image/png", "encoding": "base64", "text": "iVBORw0KGgo="}}}]}});
    let file = dir.path().join("docs.har");
    std::fs::write(&file, har.to_string()).unwrap();
    let out = surfgym(
        &["har", "import", file.to_str().unwrap(), "--name", "docs"],
        &db,
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let id = stdout.trim().to_string();
    assert!(uuid::Uuid::parse_str(&id).is_ok(), "{stdout}");
    assert!(stderr.contains("imported 2 exchanges"), "{stderr}");

    let (list, _) = text(&surfgym(&["har", "list"], &db));
    assert!(
        list.contains(&id) && list.contains("2 exchanges") && list.contains("imported"),
        "{list}"
    );

    let out = surfgym(&["har", "export", &id], &db);
    let back: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let entries = back["log"]["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0]["response"]["content"]["text"], "<p>hello</p>");
    assert_eq!(entries[1]["response"]["content"]["text"], "iVBORw0KGgo=");

    // Into a reader that stopped reading, quietly.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_surfgym"))
        .args(["har", "export", &id])
        .env("DATABASE_URL", &db)
        .env("SURFGYM_LOG", "warn")
        .stdout(writer)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut bad = har.clone();
    bad["log"]["entries"][1]["response"]["status"] = serde_json::json!(1000);
    std::fs::write(&file, bad.to_string()).unwrap();
    let out = surfgym(&["har", "import", file.to_str().unwrap()], &db);
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("log.entries[1].response.status"),
        "{stderr}"
    );
    let out = surfgym(&["har", "export", &uuid::Uuid::new_v4().to_string()], &db);
    assert!(!out.status.success());
    assert!(text(&out).1.contains("no recording"));
}
