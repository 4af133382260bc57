//! What a process killed outright (`kill -9`, an OOM kill) leaves behind: its browsers,
//! still running with nobody to close them (Chromium does not notice its parent's death),
//! and their profile directories, several MB each, for as long as the machine lives. A
//! pool closes its own browsers and removes their profiles; the first launch of a process
//! kills the browsers of surfgym processes that are gone ([`reap_once`]) and removes
//! abandoned profiles ([`sweep_once`]).

use std::path::Path;
use std::sync::Once;
use std::time::{Duration, SystemTime};

/// What every profile directory's name starts with.
pub(crate) const PREFIX: &str = "surfgym-chromium-";

/// A profile directory's name prefix for this process: its pid says whose browser it is.
pub(crate) fn prefix() -> String {
    format!("{PREFIX}{}-", std::process::id())
}

/// Kills the browsers of surfgym processes that are gone, once per process.
pub(crate) fn reap_once() {
    static REAPED: Once = Once::new();
    REAPED.call_once(|| {
        let killed = reap(&std::env::temp_dir());
        if killed > 0 {
            tracing::warn!(
                killed,
                "killed browsers left running by surfgym processes that died (kill -9?)"
            );
        }
    });
}

/// Kills every process whose command line gives a profile in `dir` of a surfgym process
/// that no longer exists (the owner's pid is in the profile's name, see [`prefix`]);
/// returns how many. A pid reused since is taken for alive: a browser is never killed
/// while its owner might run; nor one of another pid namespace.
pub(crate) fn reap(dir: &Path) -> usize {
    let flag = format!("--user-data-dir={}", dir.join(PREFIX).display());
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let ours = std::fs::read_link("/proc/self/ns/pid").ok();
    let mut killed = 0;
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(p.path().join("cmdline")) else {
            continue;
        };
        let owner = cmdline
            .split(|b| *b == 0)
            .filter_map(|a| std::str::from_utf8(a).ok())
            .find_map(|a| a.strip_prefix(flag.as_str()))
            .and_then(|rest| rest.split_once('-')?.0.parse::<u32>().ok());
        let Some(owner) = owner else { continue };
        if owner == std::process::id() || Path::new(&format!("/proc/{owner}")).exists() {
            continue;
        }
        // A browser of another pid namespace (a container seen from its host) names its
        // owner by a pid this /proc does not show: never ours to judge.
        let theirs = std::fs::read_link(p.path().join("ns/pid")).ok();
        if theirs.is_none() || theirs != ours {
            continue;
        }
        // No signal API in std; `kill` is procps', on every machine Chromium runs on.
        let ok = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            killed += 1;
        } else {
            tracing::warn!(pid, owner, "cannot kill an orphaned browser");
        }
    }
    killed
}

/// A profile Chromium never locked is only taken for abandoned after this long: its
/// launch may still be under way in another process.
const UNLOCKED_GRACE: Duration = Duration::from_secs(3600);

/// Removes abandoned profiles from the temporary directory, once per process.
pub(crate) fn sweep_once() {
    static SWEPT: Once = Once::new();
    SWEPT.call_once(|| {
        let removed = sweep(&std::env::temp_dir(), &hostname());
        if removed > 0 {
            tracing::info!(
                removed,
                "removed profile directories of browsers that died with their process"
            );
        }
    });
}

/// Removes the profiles in `dir` whose browser is gone; returns how many. Chromium's
/// `SingletonLock` (a symbolic link to `host-pid`) names the browser that owns a profile:
/// one on this host whose process no longer exists is gone. Profiles of other hosts (a
/// shared temporary directory) are left alone.
pub(crate) fn sweep(dir: &Path, host: &str) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        let path = entry.path();
        // Not following links: a link named like a profile is not ours to remove.
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let abandoned = match std::fs::read_link(path.join("SingletonLock")) {
            Ok(target) => {
                let target = target.to_string_lossy().into_owned();
                match target.rsplit_once('-') {
                    Some((h, pid)) if h == host => pid
                        .parse::<u32>()
                        .is_ok_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()),
                    _ => false,
                }
            }
            Err(_) => entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| SystemTime::now().duration_since(t).ok())
                .is_some_and(|age| age > UNLOCKED_GRACE),
        };
        if abandoned && std::fs::remove_dir_all(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// This machine's name, as Chromium writes it into `SingletonLock`.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn profile(dir: &Path, name: &str, lock: Option<String>) -> std::path::PathBuf {
        let p = dir.join(format!("{PREFIX}{name}"));
        std::fs::create_dir(&p).unwrap();
        std::fs::write(p.join("Local State"), "{}").unwrap();
        if let Some(l) = lock {
            symlink(l, p.join("SingletonLock")).unwrap();
        }
        p
    }

    #[test]
    fn only_profiles_of_dead_browsers_on_this_host_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        // A process that has exited: its pid names no process (until reused, which a
        // test this short does not meet).
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let alive = std::process::id();
        let gone = profile(tmp.path(), "gone", Some(format!("box-{dead}")));
        let live = profile(tmp.path(), "live", Some(format!("box-{alive}")));
        let elsewhere = profile(tmp.path(), "other", Some(format!("other-box-{dead}")));
        let fresh = profile(tmp.path(), "fresh", None);
        let unrelated = tmp.path().join("not-ours");
        std::fs::create_dir(&unrelated).unwrap();

        assert_eq!(sweep(tmp.path(), "box"), 1);
        assert!(!gone.exists(), "its browser is gone");
        assert!(live.exists(), "its browser runs");
        assert!(elsewhere.exists(), "another host's");
        assert!(fresh.exists(), "not locked yet, and new");
        assert!(unrelated.exists());
    }

    #[test]
    fn only_browsers_of_gone_owners_are_killed() {
        let tmp = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        // Stand-ins for browsers: the flag is all the reaper reads of them. `read` is a
        // builtin, so the shell starts no child that would carry the flag too.
        let browser = |owner: u32| {
            let flag = format!(
                "--user-data-dir={}/{PREFIX}{owner}-x1",
                tmp.path().display()
            );
            std::process::Command::new("sh")
                .args(["-c", "read line", &flag])
                .stdin(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let mut orphan = browser(dead);
        let mut owned = browser(std::process::id());
        // A process's /proc entry can be briefly unreadable on a loaded machine; the
        // reaper skips what it cannot read, so it is asked again until the orphan is gone.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut killed = 0;
        while orphan.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
            killed += reap(tmp.path());
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert_eq!(killed, 1, "the orphan alone is killed, once");
        let status = orphan.wait().unwrap();
        assert!(!status.success(), "the orphan was killed: {status:?}");
        assert!(
            owned.try_wait().unwrap().is_none(),
            "a live owner's browser runs on"
        );
        owned.kill().unwrap();
        owned.wait().unwrap();
    }
}
