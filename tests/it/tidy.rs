//! House rules, checked on every source file (rust-analyzer's tidy test): each file opens
//! with a `//!` doc saying what it is for, no debugging or placeholder macro is left in, no
//! test prints, and no SQL spells a lifecycle state's word (queries bind `store::state`'s
//! enums).

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// Every Rust file under the workspace's folders `dirs`.
fn files_under(root: &Path, dirs: &[&str]) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in dirs {
        rust_files(&root.join(dir), &mut files);
    }
    files
}

#[test]
fn every_file_has_a_doc_and_no_leftovers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = files_under(
        root,
        &[
            "spaces",
            "metrics",
            "browser-pool",
            "tasks",
            "rubrics",
            "inference",
            "store",
            "pg-cluster",
            "policy",
            "engine",
            "training",
            "trainloop",
            "web",
            "cli",
            "tests",
        ],
    );
    assert!(files.len() > 40, "found {} files", files.len());
    let mut problems = Vec::new();
    // Built from parts so this file does not trip its own check.
    let banned = [
        ["db", "g!("].concat(),
        ["to", "do!("].concat(),
        ["unimpl", "emented!("].concat(),
    ];
    let printing = [["eprint", "ln!("].concat(), ["print", "ln!("].concat()];
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let rel = f.strip_prefix(root).unwrap().display().to_string();
        let is_build_script = rel.ends_with("build.rs");
        if !is_build_script && !text.trim_start().starts_with("//!") {
            problems.push(format!("{rel}: does not open with a `//!` doc comment"));
        }
        for b in &banned {
            if text.contains(b.as_str()) {
                problems.push(format!("{rel}: contains `{b}`"));
            }
        }
        // A test says what went wrong in its assertion messages; printing is debugging
        // left behind (and noise in every passing run).
        let is_test = Path::new(&rel)
            .components()
            .any(|c| c.as_os_str() == "tests");
        for b in &printing {
            if is_test && text.contains(b.as_str()) {
                problems.push(format!("{rel}: a test prints (`{b}`)"));
            }
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// The words live in `store::state` alone: SQL in the store and in the tests binds the
/// enums, so a state renamed there cannot leave a query matching nothing. Only the
/// migrations' `CHECK`s list the words (they are SQL files, not checked here).
#[test]
fn no_query_spells_a_state() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = files_under(
        root,
        &[
            "store",
            "tests",
            "engine",
            "trainloop",
            "web",
            "cli",
            "policy",
        ],
    );
    let words: std::collections::BTreeSet<String> = (store::Status::ALL.iter().map(|s| s.as_str()))
        .chain(store::EpisodeStatus::ALL.iter().map(|s| s.as_str()))
        .chain(store::Stage::ALL.iter().map(|s| s.as_str()))
        .map(|w| format!("'{w}'"))
        .collect();
    let mut problems = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let rel = f.strip_prefix(root).unwrap().display().to_string();
        for w in &words {
            if text.contains(w.as_str()) {
                problems.push(format!("{rel}: spells {w} (bind the state's enum instead)"));
            }
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}
