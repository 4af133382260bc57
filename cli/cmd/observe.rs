//! `surfgym observe`: what an agent sees on a page, after the actions given run in order:
//! the element list as prompts show it, tabs, page events, the last action's error, the
//! accessibility tree, and, with `--out`, the screenshot with and without set-of-marks
//! and the whole observation as JSON. For writing tasks, reference solutions and rubrics,
//! and for finding out why a policy cannot do something on a page. No database.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use browser_pool::{Action, BrowserPool, Observation, parse_action};
use clap::Args;

use crate::args::Common;

#[derive(Args)]
pub struct ObserveArgs {
    /// The page to open (http or https).
    pub url: String,
    /// An action to run after opening the page, in the action grammar (`click(3)`,
    /// `type(2, "hello")`, `scroll(down)`); repeat for several, run in order, each followed
    /// by settling. Element numbers are those of the observation before it.
    #[arg(long = "act", value_name = "ACTION")]
    pub actions: Vec<String>,
    /// Write screenshot.jpg (or .png), marks.jpg (set-of-marks) and observation.json here.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print the observation as JSON (without the images) instead of text.
    #[arg(long)]
    pub json: bool,
    /// List elements outside the viewport too (prompts leave them out).
    #[arg(long)]
    pub all: bool,
}

/// Opens the page, runs the actions, prints the final observation. Exits 1 when an
/// action failed (the output says which and why).
pub async fn observe(common: &Common, args: ObserveArgs) -> anyhow::Result<ExitCode> {
    let url = url::Url::parse(&args.url)
        .with_context(|| format!("URL {:?} is not a valid URL", args.url))?;
    if !matches!(url.scheme(), "http" | "https") {
        bail!(
            "URL {:?}: only http and https pages can be observed (the pool blocks other schemes)",
            args.url
        );
    }
    let actions = args
        .actions
        .iter()
        .enumerate()
        .map(|(i, line)| {
            parse_action(line).map_err(|e| {
                anyhow::anyhow!(
                    "--act #{} {line:?} is not an action: {e} (see docs/reference/formats.md for the grammar)",
                    i + 1
                )
            })
        })
        .collect::<anyhow::Result<Vec<Action>>>()?;
    let mut cfg = crate::setup::pool_config_for(common, 1, 1)?;
    cfg.standby_contexts = 0;
    cfg.set_of_marks = args.out.is_some();
    let pool = BrowserPool::launch(cfg)
        .await
        .context("cannot start Chromium")?;
    let outcome = drive(&pool, url.as_str(), &actions, &args.actions).await;
    pool.shutdown().await;
    let (obs, failed) = outcome?;
    if let Some(dir) = &args.out {
        write_out(dir, &obs)?;
        eprintln!(
            "wrote the screenshots and observation.json to {}",
            dir.display()
        );
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary(&obs))?);
    } else {
        print!("{}", text(&obs, args.all));
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Opens `url`, runs `actions` (reporting each on stderr), and observes; `true` when an
/// action failed.
async fn drive(
    pool: &BrowserPool,
    url: &str,
    actions: &[Action],
    lines: &[String],
) -> anyhow::Result<(Observation, bool)> {
    let mut session = pool.lease().await.context("no browser context")?;
    let mut failed = false;
    let opened = session.act(&Action::Goto(url.to_string())).await?;
    if let Some(e) = opened.error {
        eprintln!("opening {url}: {e}");
        failed = true;
    }
    for (action, line) in actions.iter().zip(lines) {
        // Numbers refer to the observation before the action, as for a policy.
        session.observe().await?;
        let report = session.act(action).await?;
        match report.error {
            Some(e) => {
                eprintln!("{line}: failed: {e}");
                failed = true;
            }
            None => eprintln!("{line}: done"),
        }
    }
    let obs = session.observe().await?;
    session.close().await;
    Ok((obs, failed))
}

/// The observation as people read it.
fn text(obs: &Observation, all: bool) -> String {
    let mut out = format!("URL: {}\nTitle: {:?}\n", obs.url, obs.title);
    if let Some(tabs) = obs.tabs_line() {
        out.push_str(&format!("Tabs: {tabs}\n"));
    }
    if let Some(e) = &obs.last_action_error {
        out.push_str(&format!("Last action failed: {e}\n"));
    }
    for e in &obs.events {
        out.push_str(&format!("Event: {e}\n"));
    }
    let shown = obs.elements.iter().filter(|e| e.in_viewport).count();
    out.push_str(&format!(
        "Elements in the viewport ({shown} of {}):\n",
        obs.elements.len()
    ));
    for line in obs.element_lines() {
        out.push_str(&format!("  {line}\n"));
    }
    let outside: Vec<_> = obs.elements.iter().filter(|e| !e.in_viewport).collect();
    if !outside.is_empty() {
        if all {
            out.push_str("Outside the viewport:\n");
            for e in outside {
                out.push_str(&format!(
                    "  {} at ({:.0}, {:.0})\n",
                    e.line(),
                    e.bbox.x,
                    e.bbox.y
                ));
            }
        } else {
            out.push_str(&format!(
                "  … {} more outside the viewport (--all lists them)\n",
                outside.len()
            ));
        }
    }
    if let Some(tree) = &obs.ax_tree {
        out.push_str(&format!("Accessibility tree:\n{tree}\n"));
    }
    out
}

/// The observation without its images.
fn summary(obs: &Observation) -> serde_json::Value {
    serde_json::json!({
        "url": obs.url,
        "title": obs.title,
        "elements": obs.elements,
        "scroll": obs.scroll,
        "tabs": obs.tabs,
        "events": obs.events,
        "last_action_error": obs.last_action_error,
        "ax_tree": obs.ax_tree,
    })
}

fn write_out(dir: &Path, obs: &Observation) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let ext = if obs.screenshot.mime == "image/png" {
        "png"
    } else {
        "jpg"
    };
    let write = |name: String, bytes: &[u8]| {
        let path = dir.join(name);
        std::fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))
    };
    write(format!("screenshot.{ext}"), &obs.screenshot.bytes)?;
    if let Some(marked) = &obs.marked {
        write(format!("marks.{ext}"), &marked.bytes)?;
    }
    write(
        "observation.json".into(),
        serde_json::to_string_pretty(&summary(obs))?.as_bytes(),
    )
}
