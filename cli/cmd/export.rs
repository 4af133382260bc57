//! `surfgym export`: finished episodes as JSON Lines for a trainer outside surfgym, with
//! their screenshots as files on request.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use futures::StreamExt;
use indicatif::ProgressBar;
use store::Store;
use store::export::ExportFilter;
use uuid::Uuid;

use crate::args::Common;
use crate::db;

#[derive(Args)]
pub struct ExportArgs {
    /// The campaign whose finished episodes to export (repeatable; all campaigns if none).
    #[arg(long = "campaign", value_name = "ID")]
    pub campaigns: Vec<String>,
    /// Only tasks of this split.
    #[arg(long, value_parser = ["train", "test"])]
    pub split: Option<String>,
    /// Only successful (true) or unsuccessful (false) episodes.
    #[arg(long)]
    pub success: Option<bool>,
    /// Write here instead of standard output.
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Also write each screenshot once into this directory (`<hash>.jpg` / `.png`) and name
    /// its file in the step (`screenshot_file`, `final_screenshot_file`).
    #[arg(long, value_name = "DIR")]
    pub screenshots: Option<PathBuf>,
}

pub async fn export(common: &Common, args: ExportArgs) -> anyhow::Result<ExitCode> {
    // Every id is checked before anything is written.
    let campaigns = args
        .campaigns
        .iter()
        .map(|c| {
            Uuid::parse_str(c)
                .with_context(|| format!("--campaign {c}: not a campaign id (a UUID)"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let db = db::open(common).await?;
    for id in &campaigns {
        if db.store.get_campaign(*id).await?.is_none() {
            anyhow::bail!("--campaign {id}: no such campaign (`surfgym campaign list` shows them)");
        }
    }
    let filters: Vec<ExportFilter> = if campaigns.is_empty() {
        vec![ExportFilter {
            campaign: None,
            split: args.split.clone(),
            success: args.success,
        }]
    } else {
        campaigns
            .iter()
            .map(|c| ExportFilter {
                campaign: Some(*c),
                split: args.split.clone(),
                success: args.success,
            })
            .collect()
    };
    if let Some(dir) = &args.screenshots {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }

    let mut total = 0;
    for f in &filters {
        total += store::export::count(&db.store, f).await?;
    }
    let (mut out, bar): (Box<dyn Write>, ProgressBar) = match &args.out {
        Some(path) => {
            let file = std::fs::File::create(path)
                .with_context(|| format!("creating {}", path.display()))?;
            let bar = crate::progress::bar(
                total.max(0) as u64,
                "exporting",
                9,
                "{pos}/{len} episodes {elapsed_precise} eta {eta}",
            )?;
            (Box::new(std::io::BufWriter::new(file)), bar)
        }
        // Standard output carries the data: no bar on it.
        None => (
            Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
            ProgressBar::hidden(),
        ),
    };

    let mut written_shots = HashMap::new();
    let mut episodes = 0u64;
    for f in filters {
        let mut stream = std::pin::pin!(store::export::episodes(db.store.clone(), f));
        while let Some(episode) = stream.next().await {
            let mut line = serde_json::to_value(episode?)?;
            if let Some(dir) = &args.screenshots {
                attach_screenshots(&db.store, dir, &mut line, &mut written_shots).await?;
            }
            serde_json::to_writer(&mut out, &line)?;
            out.write_all(b"\n")?;
            episodes += 1;
            bar.inc(1);
        }
    }
    out.flush()?;
    bar.finish_and_clear();
    if let Some(path) = &args.out {
        eprintln!(
            "wrote {episodes} episodes to {}{}",
            path.display(),
            match &args.screenshots {
                Some(dir) => format!(", {} screenshots to {}", written_shots.len(), dir.display()),
                None => String::new(),
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the episode's screenshots into `dir` (each hash once per export) and names the
/// files beside their hashes.
async fn attach_screenshots(
    store: &Store,
    dir: &Path,
    episode: &mut serde_json::Value,
    written: &mut HashMap<String, String>,
) -> anyhow::Result<()> {
    if let Some(hash) = episode["final_screenshot"].as_str().map(str::to_owned) {
        episode["final_screenshot_file"] = file_of(store, dir, &hash, written).await?.into();
    }
    if let Some(steps) = episode["steps"].as_array_mut() {
        for step in steps {
            if let Some(hash) = step["screenshot"].as_str().map(str::to_owned) {
                step["screenshot_file"] = file_of(store, dir, &hash, written).await?.into();
            }
        }
    }
    Ok(())
}

async fn file_of(
    store: &Store,
    dir: &Path,
    hash: &str,
    written: &mut HashMap<String, String>,
) -> anyhow::Result<String> {
    if let Some(path) = written.get(hash) {
        return Ok(path.clone());
    }
    let (mime, bytes) = store
        .get_blob(hash)
        .await?
        .with_context(|| format!("screenshot {hash} is referenced but not stored"))?;
    let ext = if mime == "image/png" { "png" } else { "jpg" };
    let path = dir.join(format!("{hash}.{ext}"));
    std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
    let path = path.display().to_string();
    written.insert(hash.to_string(), path.clone());
    Ok(path)
}
