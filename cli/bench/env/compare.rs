//! The comparison of `bench env`: BrowserGym's figures (its `bench_browsergym.py` JSON
//! given with `--peer`, else the figures recorded in its RESULTS.md), and the verdicts
//! against them and against the raw CDP floor.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;
use serde_json::Value;

use super::latency::LatencySummary;
use super::throughput::Level;

/// Figures used when no peer results file is given (RESULTS.md, 2026-11-22).
const PEER_FALLBACK: Peer = Peer {
    source: None,
    step_default_s: 0.936,
    step_fast_s: 0.355,
    reset_default_s: 2.68,
    reset_fast_s: 2.79,
    steps_per_s_8_default: 1.20,
    steps_per_s_8_fast: 1.40,
    mem_per_env_8_mb: 355.0,
};

/// BrowserGym's figures: from one results file, or the recorded ones.
#[derive(Debug, Clone, Serialize)]
pub struct Peer {
    pub source: Option<String>,
    step_default_s: f64,
    step_fast_s: f64,
    reset_default_s: f64,
    reset_fast_s: f64,
    steps_per_s_8_default: f64,
    steps_per_s_8_fast: f64,
    mem_per_env_8_mb: f64,
}

/// The peers to compare with: one per `--peer` file, else the recorded figures. No file is
/// read unless named: a default path would have to lie outside the repository.
pub fn load_peers(paths: &[PathBuf]) -> anyhow::Result<Vec<Peer>> {
    if paths.is_empty() {
        Ok(vec![PEER_FALLBACK])
    } else {
        paths.iter().map(|p| load_peer(p)).collect()
    }
}

/// One peer's figures from a `bench_browsergym.py` JSON file; figures it lacks are the
/// recorded ones.
fn load_peer(path: &Path) -> anyhow::Result<Peer> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let v: Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let num = |ptr: &str| v.pointer(ptr).and_then(Value::as_f64);
    let level8 = |phase: &str| {
        v.get(phase)
            .and_then(Value::as_array)
            .and_then(|a| a.iter().find(|l| l["k"].as_u64() == Some(8)))
            .cloned()
    };
    let d8 = level8("parallel_default");
    let f8 = level8("parallel_fast");
    let f = PEER_FALLBACK;
    let mem = |l: &Option<Value>| {
        l.as_ref()
            .and_then(|l| l["mem_peak_sum_env_total_pss_mb"].as_f64())
            .map(|m| m / 8.0)
    };
    let mems: Vec<f64> = [mem(&d8), mem(&f8)].into_iter().flatten().collect();
    Ok(Peer {
        source: Some(path.display().to_string()),
        step_default_s: num("/serial_default/step_s/median").unwrap_or(f.step_default_s),
        step_fast_s: num("/serial_fast/step_s/median").unwrap_or(f.step_fast_s),
        reset_default_s: num("/serial_default/reset_s/median").unwrap_or(f.reset_default_s),
        reset_fast_s: num("/serial_fast/reset_s/median").unwrap_or(f.reset_fast_s),
        steps_per_s_8_default: d8
            .as_ref()
            .and_then(|l| l["agg_steps_per_s"].as_f64())
            .unwrap_or(f.steps_per_s_8_default),
        steps_per_s_8_fast: f8
            .as_ref()
            .and_then(|l| l["agg_steps_per_s"].as_f64())
            .unwrap_or(f.steps_per_s_8_fast),
        mem_per_env_8_mb: if mems.is_empty() {
            f.mem_per_env_8_mb
        } else {
            mems.iter().sum::<f64>() / mems.len() as f64
        },
    })
}

/// One figure of ours against the floor's or BrowserGym's.
#[derive(Debug, Serialize)]
pub struct Verdict {
    /// What the figure is compared with: the floor, or a BrowserGym results file.
    against: String,
    target: String,
    ours: String,
    theirs: String,
    ratio: f64,
    needed: f64,
    pass: bool,
}

/// The verdicts: each task set's step against the raw CDP floor, then, for each peer, the
/// MiniWoB++ step and reset and the 8-context throughput and memory against theirs.
pub fn verdicts(latency: &[LatencySummary], levels: &[Level], peers: &[Peer]) -> Vec<Verdict> {
    let find = |name: &str| latency.iter().find(|l| l.name == name);
    let mut verdicts = Vec::new();
    let mut verdict =
        |against: &str, target: &str, ours: String, theirs: String, ratio: f64, needed: f64| {
            verdicts.push(Verdict {
                against: against.to_string(),
                target: target.to_string(),
                ours,
                theirs,
                ratio,
                needed,
                pass: ratio >= needed,
            });
        };
    for name in ["miniwob", "bundled"] {
        if let Some(l) = find(name) {
            verdict(
                "raw CDP floor",
                &format!("step within 1.5x of the raw CDP floor ({name}, p50)"),
                format!("{:.0} ms", l.step.p50),
                format!("floor {:.0} ms", l.floor.p50),
                // Expressed as floor/step so that "higher is better" as for the others.
                l.floor.p50 / l.step.p50,
                1.0 / 1.5,
            );
        }
    }
    for peer in peers {
        let label = peer
            .source
            .clone()
            .unwrap_or_else(|| "BrowserGym, recorded".into());
        if let Some(l) = find("miniwob") {
            verdict(
                &label,
                "step >= 5x faster than BrowserGym fast",
                format!("{:.0} ms", l.step.p50),
                format!("{:.0} ms", peer.step_fast_s * 1000.0),
                peer.step_fast_s * 1000.0 / l.step.p50,
                5.0,
            );
            verdict(
                &label,
                "step >= 10x faster than BrowserGym default",
                format!("{:.0} ms", l.step.p50),
                format!("{:.0} ms", peer.step_default_s * 1000.0),
                peer.step_default_s * 1000.0 / l.step.p50,
                10.0,
            );
            let theirs = peer.reset_default_s.min(peer.reset_fast_s);
            verdict(
                &label,
                "reset >= 10x faster than BrowserGym",
                format!("{:.0} ms", l.reset.p50),
                format!("{:.0} ms", theirs * 1000.0),
                theirs * 1000.0 / l.reset.p50,
                10.0,
            );
        }
        if let Some(l) = levels.iter().find(|l| l.contexts == 8) {
            let theirs = peer.steps_per_s_8_fast.max(peer.steps_per_s_8_default);
            verdict(
                &label,
                "steps/s at 8 contexts >= 10x BrowserGym at 8 envs",
                format!("{:.2}", l.steps_per_s),
                format!("{theirs:.2}"),
                l.steps_per_s / theirs,
                10.0,
            );
            verdict(
                &label,
                "memory per context <= 1/3 of BrowserGym's per env (8)",
                format!("{:.0} MB", l.pss_per_context_mb),
                format!("{:.0} MB", peer.mem_per_env_8_mb),
                peer.mem_per_env_8_mb / l.pss_per_context_mb,
                3.0,
            );
        }
    }
    verdicts
}

/// Prints the verdicts' table.
pub fn print(verdicts: &[Verdict]) {
    println!();
    println!("| against | target | surfgym | floor / BrowserGym | ratio | needed | verdict |");
    println!("|---|---|---|---|---|---|---|");
    for v in verdicts {
        let (ratio, needed) = if v.target.starts_with("step within") {
            (
                format!("step/floor {:.2}x", 1.0 / v.ratio),
                "<= 1.50x".to_string(),
            )
        } else {
            (format!("{:.2}x", v.ratio), format!(">= {:.0}x", v.needed))
        };
        println!(
            "| {} | {} | {} | {} | {ratio} | {needed} | {} |",
            v.against,
            v.target,
            v.ours,
            v.theirs,
            if v.pass { "PASS" } else { "MISS" }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_peer_files_the_recorded_figures_are_used() {
        let peers = load_peers(&[]).unwrap();
        assert_eq!(peers.len(), 1);
        assert_eq!(peers[0].source, None);
        assert_eq!(peers[0].step_fast_s, PEER_FALLBACK.step_fast_s);
        assert_eq!(peers[0].mem_per_env_8_mb, PEER_FALLBACK.mem_per_env_8_mb);
    }

    #[test]
    fn a_peer_file_gives_what_it_has_and_the_recorded_figures_the_rest() {
        let path = std::env::temp_dir().join(format!("surfgym-peer-{}.json", std::process::id()));
        std::fs::write(
            &path,
            r#"{"serial_fast": {"step_s": {"median": 0.2}},
                "parallel_fast": [{"k": 8, "agg_steps_per_s": 2.0, "mem_peak_sum_env_total_pss_mb": 800.0}]}"#,
        )
        .unwrap();
        let peers = load_peers(std::slice::from_ref(&path)).unwrap();
        std::fs::remove_file(&path).unwrap();
        let p = &peers[0];
        assert_eq!(
            p.source.as_deref(),
            Some(path.display().to_string().as_str())
        );
        assert_eq!(p.step_fast_s, 0.2);
        assert_eq!(p.steps_per_s_8_fast, 2.0);
        assert_eq!(p.mem_per_env_8_mb, 100.0);
        assert_eq!(p.step_default_s, PEER_FALLBACK.step_default_s);
        assert!(load_peers(&[path]).is_err());
    }
}
