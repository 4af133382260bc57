//! A version link: a symbolic link naming the policy version to serve (e.g.
//! `policy/current -> v3`). The trainer moves it when it promotes a version
//! ([`promote`]); servers and rollout workers that were started on the link notice the move
//! ([`VersionLink::moved`]) and load the new target for new work, keeping the old one until
//! the new one has loaded and checked out.

use std::path::{Path, PathBuf};

/// Points `link` at `target`, atomically: a new link is made beside it and renamed over
/// the old one, so a reader sees the old target or the new one, never none.
pub fn promote(target: &Path, link: &Path) -> std::io::Result<()> {
    let target = std::fs::canonicalize(target)?;
    let name = link
        .file_name()
        .ok_or_else(|| std::io::Error::other(format!("{}: not a file name", link.display())))?;
    let tmp = link.with_file_name(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(&target, &tmp)?;
    std::fs::rename(&tmp, link).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Whether `path` is a version link (a symbolic link) rather than a model directory.
pub fn is_link(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// Watches where a version link points.
#[derive(Debug, Clone)]
pub struct VersionLink {
    link: PathBuf,
    seen: PathBuf,
}

impl VersionLink {
    /// Starts watching `link`, which must resolve now.
    pub fn new(link: &Path) -> std::io::Result<VersionLink> {
        Ok(VersionLink {
            link: link.to_path_buf(),
            seen: std::fs::canonicalize(link)?,
        })
    }

    /// The link.
    pub fn link(&self) -> &Path {
        &self.link
    }

    /// The directory it pointed to when last looked at.
    pub fn target(&self) -> &Path {
        &self.seen
    }

    /// The new target, once, if the link has moved since it was last looked at. A link
    /// that does not resolve (being replaced, or broken) counts as not moved.
    pub fn moved(&mut self) -> Option<PathBuf> {
        let now = std::fs::canonicalize(&self.link).ok()?;
        if now == self.seen {
            return None;
        }
        self.seen = now.clone();
        Some(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_promoted_link_is_seen_to_move_once() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(&b).unwrap();
        let link = tmp.path().join("current");
        promote(&a, &link).unwrap();
        assert!(is_link(&link) && !is_link(&a));
        let mut watch = VersionLink::new(&link).unwrap();
        assert_eq!(watch.target(), std::fs::canonicalize(&a).unwrap());
        assert_eq!(watch.moved(), None);
        promote(&b, &link).unwrap();
        assert_eq!(watch.moved(), Some(std::fs::canonicalize(&b).unwrap()));
        assert_eq!(watch.moved(), None, "a move is reported once");
        // No temporary link is left behind.
        let names: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 3, "{names:?}");
        // Promoting to a directory that does not exist fails and leaves the link alone.
        assert!(promote(&tmp.path().join("missing"), &link).is_err());
        assert_eq!(watch.moved(), None);
    }
}
