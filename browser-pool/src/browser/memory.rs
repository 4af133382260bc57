//! Memory of a browser's process tree, read from `/proc` (Linux).
//!
//! Chromium is a tree of processes (browser, zygotes, GPU, one renderer per site) sharing
//! much of their memory, so summing RSS over-counts about threefold. PSS (proportional set
//! size, from `smaps_rollup`) splits shared pages between their users and sums honestly.

use std::collections::HashMap;

/// Memory of one process tree, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TreeMemory {
    /// Proportional set size summed over the tree (RSS where PSS is unreadable).
    pub pss: u64,
    /// Resident set size summed over the tree (counts shared pages once per process).
    pub rss: u64,
    /// Processes in the tree.
    pub processes: usize,
}

impl std::ops::AddAssign for TreeMemory {
    fn add_assign(&mut self, o: TreeMemory) {
        self.pss += o.pss;
        self.rss += o.rss;
        self.processes += o.processes;
    }
}

/// The memory of `root` and all its descendants; `None` when `root` is not running.
pub fn process_tree(root: u32) -> Option<TreeMemory> {
    let children = children_by_parent();
    let mut out = TreeMemory::default();
    let mut stack = vec![root];
    let mut seen_root = false;
    while let Some(pid) = stack.pop() {
        let Some((pss, rss)) = process_memory(pid) else {
            continue;
        };
        seen_root |= pid == root;
        out.pss += pss;
        out.rss += rss;
        out.processes += 1;
        if let Some(kids) = children.get(&pid) {
            stack.extend(kids);
        }
    }
    seen_root.then_some(out)
}

/// Parent pid → child pids, for every process visible in `/proc`.
fn children_by_parent() -> HashMap<u32, Vec<u32>> {
    let mut map: HashMap<u32, Vec<u32>> = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return map;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some(ppid) = parent_of(pid) {
            map.entry(ppid).or_default().push(pid);
        }
    }
    map
}

fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command name: state, ppid, ...
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// (PSS, RSS) of one process in bytes.
fn process_memory(pid: u32) -> Option<(u64, u64)> {
    let field = |text: &str, name: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(name))?;
        let kb: u64 = line[name.len()..].split_whitespace().next()?.parse().ok()?;
        Some(kb * 1024)
    };
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss = field(&status, "VmRSS:").unwrap_or(0);
    let pss = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .ok()
        .and_then(|s| field(&s, "Pss:"))
        .unwrap_or(rss);
    Some((pss, rss))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_and_a_child_are_measured() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("sleep runs");
        let me = std::process::id();
        let tree = process_tree(me).expect("this process is running");
        assert!(tree.processes >= 2, "the child counts: {tree:?}");
        assert!(
            tree.rss > 1 << 20 && tree.pss > 0 && tree.pss <= tree.rss,
            "{tree:?}"
        );
        child.kill().ok();
        child.wait().ok();
        assert_eq!(process_tree(u32::MAX - 1), None);
    }
}
