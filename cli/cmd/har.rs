//! `surfgym har ...`: recordings of web state as HAR 1.2 files: export a recording
//! campaign's traffic (or one episode's), import a HAR file (as Playwright or a browser's
//! developer tools write it) as a recording campaigns can replay (`run --replay ID`),
//! list recordings.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use uuid::Uuid;

use crate::args::Common;
use crate::db;

/// `surfgym har ...`.
#[derive(clap::Subcommand)]
pub enum HarCommand {
    /// Write a recording (a recording campaign's id, or an imported one's) as HAR 1.2.
    Export {
        /// The recording: the campaign that recorded it, or an imported HAR's id.
        recording: Uuid,
        /// Only this episode's exchanges.
        #[arg(long)]
        episode: Option<Uuid>,
        /// Where to write it (default: standard output).
        #[arg(long, short)]
        out: Option<PathBuf>,
    },
    /// Read a HAR 1.2 file (bodies embedded) into a recording and print its id.
    Import {
        /// The HAR file.
        file: PathBuf,
        /// A name to list it by (default: the file's name).
        #[arg(long)]
        name: Option<String>,
    },
    /// List recordings, newest first.
    List,
}

/// `surfgym har ...`.
pub async fn run(common: &Common, cmd: HarCommand) -> anyhow::Result<ExitCode> {
    let db = db::open(common).await?;
    let store = &db.store;
    match cmd {
        HarCommand::Export {
            recording,
            episode,
            out,
        } => {
            let Some(har) = engine::recordings::export_har(store, recording, episode).await? else {
                eprintln!("error: no recording {recording} (see `surfgym har list`)");
                return Ok(ExitCode::FAILURE);
            };
            let text = serde_json::to_string_pretty(&har)?;
            match out {
                Some(path) => std::fs::write(&path, text)
                    .with_context(|| format!("writing {}", path.display()))?,
                None => println!("{text}"),
            }
        }
        HarCommand::Import { file, name } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            let json: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("{} is not JSON", file.display()))?;
            let name = name.unwrap_or_else(|| file.display().to_string());
            let (id, n) = match engine::recordings::import_har(store, &name, &json).await {
                Ok(done) => done,
                Err(e) => anyhow::bail!("{} cannot be replayed: {e}", file.display()),
            };
            println!("{id}");
            eprintln!(
                "imported {n} exchanges as recording {id}; replay it with `surfgym run --replay {id}`"
            );
        }
        HarCommand::List => {
            let all = store.list_recordings().await?;
            if all.is_empty() {
                println!(
                    "no recordings (record one with `surfgym run --record`, or `surfgym har import`)"
                );
            }
            for r in all {
                let from = r
                    .campaign_id
                    .map_or("imported".to_string(), |c| format!("campaign {c}"));
                println!("{}  {:>6} exchanges  {from}  {}", r.id, r.exchanges, r.name);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
