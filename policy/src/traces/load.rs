//! Where traces come from: finished episodes of stored campaigns, or an export's JSON
//! Lines (with the screenshots `--screenshots DIR` wrote), and where their screenshots are.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use futures::TryStreamExt;
use uuid::Uuid;

use super::{TraceEpisode, TraceError};
use store::Store;
use store::export::{self, ExportFilter};

/// Every finished episode of these campaigns, campaign by campaign in the order given,
/// each in campaign order (task, rollout): exactly the lines `surfgym export` would write.
pub async fn from_campaigns(
    store: &Store,
    campaigns: &[Uuid],
) -> Result<Vec<TraceEpisode>, TraceError> {
    let mut out = Vec::new();
    for &id in campaigns {
        if store.get_campaign(id).await?.is_none() {
            return Err(TraceError::NoCampaign(id));
        }
        let filter = ExportFilter {
            campaign: Some(id),
            ..Default::default()
        };
        let details: Vec<_> = export::episodes(store.clone(), filter)
            .try_collect()
            .await?;
        for d in details {
            // Through the export's JSON, so the store and a file give the same traces.
            let value = serde_json::to_value(&d).map_err(|e| corrupt(d.summary.id, e))?;
            out.push(serde_json::from_value(value).map_err(|e| corrupt(d.summary.id, e))?);
        }
    }
    Ok(out)
}

fn corrupt(episode: Uuid, e: serde_json::Error) -> TraceError {
    TraceError::Step {
        episode,
        step: -1,
        message: format!("the stored episode does not read as a trace: {e}"),
    }
}

/// The episodes of a `surfgym export` file. Every bad line is reported (by number);
/// blank lines are skipped.
pub fn read_jsonl(path: &Path) -> Result<(Vec<TraceEpisode>, Vec<TraceError>), TraceError> {
    let io = |source| TraceError::Io {
        path: path.display().to_string(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let (mut episodes, mut errors) = (Vec::new(), Vec::new());
    for (n, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(io)?;
        if line.trim().is_empty() {
            continue;
        }
        let bad = |message: String| TraceError::Line {
            path: path.display().to_string(),
            line: n + 1,
            message,
        };
        match serde_json::from_str::<TraceEpisode>(&line) {
            Ok(e) if e.status != store::EpisodeStatus::Finished => errors.push(bad(format!(
                "episode {} is {}, not finished",
                e.id, e.status
            ))),
            Ok(e) => episodes.push(e),
            Err(e) => errors.push(bad(format!("not an exported episode: {e}"))),
        }
    }
    Ok((episodes, errors))
}

/// Where screenshots are read from.
pub enum Blobs {
    /// The store's blobs.
    Store(Store),
    /// An export's screenshot files: the path a step names (relative paths from the
    /// export file's directory too), or `<hash>.jpg` / `.png` in `dir`.
    Files {
        /// The export file's directory.
        base: PathBuf,
        /// `--screenshots DIR`, if given.
        dir: Option<PathBuf>,
    },
}

impl Blobs {
    /// The bytes of the screenshot with this hash (`file`: the export's copy).
    pub async fn get(&self, hash: &str, file: Option<&Path>) -> Result<Vec<u8>, String> {
        match self {
            Blobs::Store(store) => match store.get_blob(hash).await {
                Ok(Some((_, bytes))) => Ok(bytes),
                Ok(None) => Err(format!("screenshot {hash} is referenced but not stored")),
                Err(e) => Err(e.to_string()),
            },
            Blobs::Files { base, dir } => {
                let mut candidates = Vec::new();
                if let Some(f) = file {
                    candidates.push(f.to_path_buf());
                    candidates.push(base.join(f));
                }
                if let Some(d) = dir {
                    candidates.push(d.join(format!("{hash}.jpg")));
                    candidates.push(d.join(format!("{hash}.png")));
                }
                for c in &candidates {
                    if let Ok(bytes) = std::fs::read(c) {
                        // A file is only the screenshot the step names if its hash says so.
                        if store::blob_hash(&bytes) == hash {
                            return Ok(bytes);
                        }
                        return Err(format!(
                            "{} is not screenshot {hash} (its sha256 differs)",
                            c.display()
                        ));
                    }
                }
                Err(format!(
                    "screenshot {hash} not found{}: export with --screenshots DIR and pass it here",
                    if candidates.is_empty() {
                        String::new()
                    } else {
                        format!(
                            " (looked for {})",
                            candidates
                                .iter()
                                .map(|c| c.display().to_string())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    }
                ))
            }
        }
    }
}
