//! `surfgym judge ...`: calibration of the judges on labelled episodes.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use engine::CampaignSpec;
use engine::judge::calibration::{self, LabelledEpisode};
use store::{EpisodeFilter, TaskFilter};

use crate::args::Common;

/// Judge commands.
#[derive(Subcommand)]
pub enum JudgeCommand {
    /// Run the judges over a labelled set and report accuracy, precision, recall and a
    /// confusion count per check kind, and run-to-run agreement (the model judge too, with
    /// --judge-onnx-model / --judge-url). Without --set the set is built by construction:
    /// the suite's reference solutions, their prefixes and perturbations, run in Chromium.
    Eval(EvalArgs),
    /// Record the bundled reference solutions' final pages as a labelled set.
    Record(RecordArgs),
    /// Play the random policy on the bundled tasks and write its episodes for a person to
    /// label (every label null), with a review sheet; reviewed, they belong in
    /// tasks/bundled/reviewed/ and join the labelled set of `judge eval`.
    RecordRandom(crate::cmd::judge_random::RecordRandomArgs),
}

/// `surfgym judge eval`.
#[derive(Args)]
pub struct EvalArgs {
    /// A recorded labelled set (JSON Lines of labelled episodes) instead of building one.
    #[arg(long)]
    pub set: Option<PathBuf>,
    /// Add known-effect mutations to the --set (a wrong answer, each element removed):
    /// for sets recorded by `surfgym judge record`, whose every fact holds.
    #[arg(long, requires = "set")]
    pub expand: bool,
    /// Write the set built by construction here (JSON Lines), to judge it again with --set.
    #[arg(long, conflicts_with = "set")]
    pub write: Option<PathBuf>,
    #[command(flatten)]
    pub suite: crate::cmd::audit::SuiteArgs,
    /// Judge each episode this many times (for run-to-run agreement): each run samples
    /// with its own seeds, so give --judge-temperature above 0 (greedy runs always agree).
    #[arg(long, default_value_t = 1)]
    pub runs: usize,
}

/// `surfgym judge record`.
#[derive(Args)]
pub struct RecordArgs {
    /// Where to write the set.
    #[arg(long)]
    pub out: PathBuf,
    /// First port of the practice sites (0: any free ports).
    #[arg(long, default_value_t = 8701)]
    pub sites_port: u16,
    /// Screenshots kept per episode (the last ones), for model judges.
    #[arg(long, default_value_t = 2)]
    pub screenshots: usize,
    /// Screenshots wider than this are scaled down (JPEG, quality 80) so the set stays
    /// small enough to keep in the repository; 0 keeps them as captured.
    #[arg(long, default_value_t = 640)]
    pub screenshot_width: u32,
}

/// Runs a judge command.
pub async fn run(common: &Common, cmd: JudgeCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        JudgeCommand::Eval(a) => eval(common, a).await,
        JudgeCommand::Record(a) => record(common, a).await,
        JudgeCommand::RecordRandom(a) => crate::cmd::judge_random::run(common, a).await,
    }
}

/// The labelled set: read from `--set`, or built by construction.
async fn labelled_set(common: &Common, args: &EvalArgs) -> anyhow::Result<Vec<LabelledEpisode>> {
    let Some(set) = &args.set else {
        let explored =
            crate::cmd::audit::explore(common, &args.suite, &["bundled", "miniwob"], true).await?;
        if let Some((t, e)) = explored.failed.first() {
            anyhow::bail!(
                "{} task(s) could not be run, {} first: {e}",
                explored.failed.len(),
                t.id
            );
        }
        let items: Vec<LabelledEpisode> = explored
            .done
            .iter()
            .flat_map(engine::audit::labels::labelled)
            .chain(explored.reviewed)
            .collect();
        if let Some(out) = &args.write {
            let lines: Vec<String> = items
                .iter()
                .map(serde_json::to_string)
                .collect::<Result<_, _>>()?;
            std::fs::write(out, lines.join("\n") + "\n")
                .with_context(|| format!("writing {}", out.display()))?;
        }
        return Ok(items);
    };
    let text =
        std::fs::read_to_string(set).with_context(|| format!("reading {}", set.display()))?;
    let recorded: Vec<LabelledEpisode> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l).with_context(|| format!("{}:{}", set.display(), i + 1))
        })
        .collect::<Result<_, _>>()?;
    if args.expand {
        calibration::expand(&recorded).map_err(anyhow::Error::msg)
    } else {
        Ok(recorded)
    }
}

async fn eval(common: &Common, args: EvalArgs) -> anyhow::Result<ExitCode> {
    let items = labelled_set(common, &args).await?;
    let model = if common.models.judge_onnx_model.is_some() || common.models.judge_url.is_some() {
        let db = crate::db::open(common).await?;
        crate::models::model_judge(common, &db.store)?
    } else {
        None
    };
    if model.is_some() && args.runs > 1 && common.models.judge_temperature <= 0.0 {
        println!(
            "note: greedy decoding (--judge-temperature 0) answers the same on every run; agreement is 100% by construction"
        );
    }
    let report = calibration::evaluate(&items, model.as_deref(), args.runs)
        .await
        .map_err(anyhow::Error::msg)?;
    println!(
        "judged {} labelled episodes, {} labelled facts, {} run(s)",
        report.episodes,
        report.facts,
        args.runs.max(1)
    );
    println!(
        "  {:<10} {:>6} {:>6} {:>6} {:>5} {:>5} {:>5} {:>5} {:>9} {:>9} {:>7}",
        "check",
        "labels",
        "true",
        "false",
        "tp",
        "fp",
        "tn",
        "fn",
        "accuracy",
        "precision",
        "recall"
    );
    for (kind, c) in &report.confusion {
        println!(
            "  {kind:<10} {:>6} {:>6} {:>6} {:>5} {:>5} {:>5} {:>5} {:>8.1}% {:>8.1}% {:>6.1}%",
            c.positives() + c.negatives(),
            c.positives(),
            c.negatives(),
            c.tp,
            c.fp,
            c.tn,
            c.fn_,
            100.0 * c.accuracy(),
            100.0 * c.precision(),
            100.0 * c.recall()
        );
    }
    println!(
        "accuracy {:.1}%  precision {:.1}%  recall {:.1}%  agreement {:.1}%",
        report.accuracy * 100.0,
        report.precision * 100.0,
        report.recall * 100.0,
        report.agreement * 100.0
    );
    for m in report.mistakes.iter().take(20) {
        println!("  wrong: {m}");
    }
    Ok(
        if report
            .by_kind
            .iter()
            .filter(|(k, _)| k.as_str() != "judge")
            .all(|(_, (n, ok))| n == ok)
        {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        },
    )
}

async fn record(common: &Common, args: RecordArgs) -> anyhow::Result<ExitCode> {
    let env = crate::setup::environment(common, args.sites_port).await?;
    let spec = CampaignSpec {
        name: Some("record calibration set".into()),
        tasks: Some(TaskFilter {
            tag: Some(engine::BUNDLED_TAG.into()),
            ..Default::default()
        }),
        policy: Some("scripted".into()),
        max_attempts: Some(2),
        ..Default::default()
    };
    let id = env.engine.create_campaign(spec).await?;
    env.engine.run_campaign(id).await?;
    let store = env.engine.store();
    let (episodes, _) = store
        .list_episodes(
            &EpisodeFilter {
                campaign: Some(id),
                success: Some(true),
                ..Default::default()
            },
            10_000,
            0,
        )
        .await?;
    let mut lines = Vec::new();
    for e in episodes {
        let Some((page, final_answer, visited_urls)) = store.judged_material(e.id).await? else {
            continue;
        };
        let screenshots =
            last_screenshots(store, e.id, args.screenshots, args.screenshot_width).await?;
        let task = store
            .load_task(&e.task_id)
            .await?
            .context("task vanished")?;
        let gold = task
            .rubric
            .groups()
            .iter()
            .flat_map(|g| &g.facts)
            .map(|f| (f.id.clone(), true))
            .collect();
        let item = LabelledEpisode {
            label: format!("{}/reference", e.task_id),
            task: serde_json::to_value(task.to_spec())?,
            page: serde_json::from_value(page)?,
            final_answer,
            visited_urls,
            gold,
            screenshots,
        };
        lines.push(serde_json::to_string(&item)?);
    }
    lines.sort();
    std::fs::write(&args.out, lines.join("\n") + "\n")?;
    println!(
        "recorded {} labelled episodes in {}",
        lines.len(),
        args.out.display()
    );
    crate::setup::finish(env).await?;
    Ok(ExitCode::SUCCESS)
}

/// The episode's last `k` screenshots (the final page's last), base64.
async fn last_screenshots(
    store: &store::Store,
    episode: uuid::Uuid,
    k: usize,
    max_width: u32,
) -> anyhow::Result<Vec<String>> {
    use base64::Engine as _;
    let Some(d) = store.get_episode(episode).await? else {
        return Ok(Vec::new());
    };
    let hashes: Vec<String> = d
        .steps
        .iter()
        .filter_map(|s| s.core.screenshot.clone())
        .chain(d.final_screenshot.clone())
        .collect();
    let mut out = Vec::new();
    for h in &hashes[hashes.len().saturating_sub(k)..] {
        if let Some((_, bytes)) = store.get_blob(h).await? {
            let bytes = shrink(bytes, max_width)?;
            out.push(base64::engine::general_purpose::STANDARD.encode(bytes));
        }
    }
    Ok(out)
}

/// Scales a screenshot down to `max_width` pixels wide (JPEG, quality 80); narrower ones
/// and `max_width` 0 are kept as they are.
fn shrink(bytes: Vec<u8>, max_width: u32) -> anyhow::Result<Vec<u8>> {
    let img = image::load_from_memory(&bytes).context("a stored screenshot is not an image")?;
    if max_width == 0 || img.width() <= max_width {
        return Ok(bytes);
    }
    let height = (u64::from(img.height()) * u64::from(max_width) / u64::from(img.width())).max(1);
    let small = img
        .resize_exact(
            max_width,
            height as u32,
            image::imageops::FilterType::Triangle,
        )
        .to_rgb8();
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 80).encode_image(&small)?;
    Ok(out)
}
