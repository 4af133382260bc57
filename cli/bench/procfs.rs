//! What the benchmarks read from Linux's /proc: process trees, where the CPU went, load
//! averages, and this process's own memory and open files. Readings only; a missing or
//! unreadable /proc gives empty or zero figures, never an error.

use std::collections::BTreeMap;

use serde::Serialize;

/// For each root pid, the number of processes in its tree (itself included), from /proc.
pub fn descendants(roots: &[u32]) -> Vec<usize> {
    let mut parent: BTreeMap<u32, u32> = BTreeMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            let ppid = stat
                .rfind(')')
                .and_then(|i| stat[i + 1..].split_whitespace().nth(1))
                .and_then(|p| p.parse().ok());
            if let Some(ppid) = ppid {
                parent.insert(pid, ppid);
            }
        }
    }
    roots
        .iter()
        .map(|&root| {
            parent
                .keys()
                .filter(|&&pid| {
                    let mut p = pid;
                    for _ in 0..64 {
                        if p == root {
                            return true;
                        }
                        match parent.get(&p) {
                            Some(&pp) if pp != p => p = pp,
                            _ => return false,
                        }
                    }
                    false
                })
                .count()
        })
        .collect()
}

/// CPU time counters at one moment, in clock ticks.
#[derive(Debug, Clone, Copy)]
pub struct CpuSnap {
    /// Busy time of all CPUs (/proc/stat).
    machine_busy: u64,
    /// All time of all CPUs.
    machine_total: u64,
    /// This process alone (user + system).
    own: u64,
    /// This process and every descendant (the browsers), with the time of exited
    /// descendants their parents reaped.
    tree: u64,
}

/// Where the CPU went over a phase, in percent of the whole machine (all CPUs).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct CpuShare {
    pub busy_pct: f64,
    pub surfgym_pct: f64,
    pub browsers_pct: f64,
    /// Busy time outside this process tree (other work on the machine).
    pub other_pct: f64,
}

/// The counters now, `None` where /proc cannot be read.
pub fn cpu_snap() -> Option<CpuSnap> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let v: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let machine_total: u64 = v.iter().sum();
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    // pid → (parent, user + system, reaped children's user + system)
    let mut procs: BTreeMap<u32, (u32, u64, u64)> = BTreeMap::new();
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // After the command name: state ppid ... utime(12) stime(13) cutime(14) cstime(15).
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        let num = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
        procs.insert(pid, (num(1) as u32, num(11) + num(12), num(13) + num(14)));
    }
    let me = std::process::id();
    let in_tree = |mut p: u32| {
        for _ in 0..64 {
            if p == me {
                return true;
            }
            match procs.get(&p) {
                Some(&(pp, ..)) if pp != p && pp != 0 => p = pp,
                _ => return false,
            }
        }
        false
    };
    let tree = procs
        .iter()
        .filter(|(pid, _)| in_tree(**pid))
        .map(|(_, (_, t, c))| t + c)
        .sum();
    let own = procs.get(&me).map_or(0, |p| p.1);
    Some(CpuSnap {
        machine_busy: machine_total - idle,
        machine_total,
        own,
        tree,
    })
}

/// Where the CPU went between two snapshots.
pub fn cpu_share(a: Option<CpuSnap>, b: Option<CpuSnap>) -> Option<CpuShare> {
    let (a, b) = (a?, b?);
    let total = b.machine_total.saturating_sub(a.machine_total).max(1) as f64;
    let pct = |x: u64| 100.0 * x as f64 / total;
    let busy = b.machine_busy.saturating_sub(a.machine_busy);
    let tree = b.tree.saturating_sub(a.tree);
    let own = b.own.saturating_sub(a.own);
    Some(CpuShare {
        busy_pct: pct(busy),
        surfgym_pct: pct(own),
        browsers_pct: pct(tree.saturating_sub(own)),
        other_pct: pct(busy.saturating_sub(tree)),
    })
}

/// A CPU share as a table cell (`-` when unknown).
pub fn cpu_cell(c: &Option<CpuShare>) -> String {
    c.map_or("-".to_string(), |c| {
        format!(
            "{:.0}% (surfgym {:.0}%, browsers {:.0}%, other {:.0}%)",
            c.busy_pct, c.surfgym_pct, c.browsers_pct, c.other_pct
        )
    })
}

/// The 1-, 5- and 15-minute load averages.
pub fn loadavg() -> Vec<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .filter_map(|x| x.parse().ok())
        .collect()
}

/// This process's resident set size in bytes.
pub fn own_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// How many files this process has open.
pub fn own_open_files() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}
