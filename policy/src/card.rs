//! A model directory's fingerprint: which checkpoint a model policy ran, recorded on its
//! [`PolicyCard`] (the card itself is the store's, re-exported here).

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use sha2::{Digest, Sha256};

/// Files at most this large are hashed whole; larger ones are sampled.
const WHOLE: u64 = 16 << 20;
/// Chunks read from a larger file, evenly spread from its first byte to its last.
const CHUNKS: u64 = 64;
const CHUNK: u64 = 64 << 10;

/// A fingerprint of a model directory: SHA-256 over every file's relative path and size
/// (the directory and its `onnx/`), and its bytes: whole for files up to 16 MiB, else 64
/// chunks of 64 KiB spread over the file. Reading 4 MiB per large file keeps loading a
/// multi-gigabyte model fast; a new checkpoint rewrites its weights throughout, so its
/// samples differ. Hidden files are skipped, and so are a version's optimiser moments.
pub fn fingerprint(dir: &Path) -> std::io::Result<String> {
    let mut files = Vec::new();
    for sub in [Path::new(""), Path::new("onnx")] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for e in entries {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
            // Links are followed: a policy version and a paired model link the base's
            // files, and those bytes are part of what the policy runs.
            // A version's AdamW moments change nothing the policy does, and a run removes
            // them from superseded versions: counted, they would change a version's
            // fingerprint after its episodes recorded it.
            let moments = sub.as_os_str().is_empty() && name == inference::version::OPTIMIZER;
            if !name.starts_with('.') && !moments && std::fs::metadata(e.path())?.is_file() {
                files.push(sub.join(name));
            }
        }
    }
    files.sort();
    let mut h = Sha256::new();
    let mut buf = vec![0u8; CHUNK as usize];
    for rel in &files {
        let mut f = std::fs::File::open(dir.join(rel))?;
        let len = f.metadata()?.len();
        h.update(rel.to_string_lossy().as_bytes());
        h.update([0]);
        h.update(len.to_le_bytes());
        if len <= WHOLE {
            std::io::copy(&mut f, &mut h)?;
            continue;
        }
        for i in 0..CHUNKS {
            let at = i * (len - CHUNK) / (CHUNKS - 1);
            f.seek(SeekFrom::Start(at))?;
            f.read_exact(&mut buf)?;
            h.update(&buf);
        }
    }
    let digest = h.finalize();
    Ok(format!(
        "sha256:{}",
        digest
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("surfgym-card-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("onnx")).unwrap();
        d
    }

    #[test]
    fn the_fingerprint_follows_the_bytes_not_the_place() {
        let a = dir("a");
        std::fs::write(a.join("config.json"), b"{}").unwrap();
        // Larger than the whole-file limit: sampled.
        let mut weights = vec![7u8; (WHOLE + 3 * CHUNK) as usize];
        std::fs::write(a.join("onnx/decoder.onnx"), &weights).unwrap();
        std::fs::write(a.join(".cache"), b"ignored").unwrap();
        let first = fingerprint(&a).unwrap();
        assert!(first.starts_with("sha256:") && first.len() == 71, "{first}");

        // The same files elsewhere, hidden files aside: the same fingerprint.
        let b = dir("b");
        std::fs::write(b.join("config.json"), b"{}").unwrap();
        std::fs::write(b.join("onnx/decoder.onnx"), &weights).unwrap();
        assert_eq!(fingerprint(&b).unwrap(), first);

        // New weights (here: the bytes of the 11th sampled chunk) or config: a new
        // fingerprint.
        let len = weights.len() as u64;
        let at = 10 * (len - CHUNK) / (CHUNKS - 1);
        weights[at as usize..][..CHUNK as usize].fill(8);
        std::fs::write(b.join("onnx/decoder.onnx"), &weights).unwrap();
        let changed = fingerprint(&b).unwrap();
        assert_ne!(changed, first);
        std::fs::write(a.join("config.json"), b"{\"v\": 2}").unwrap();
        assert_ne!(fingerprint(&a).unwrap(), first);
        // Small files are hashed whole: any byte counts.
        std::fs::write(a.join("config.json"), b"{}").unwrap();
        std::fs::write(a.join("tokenizer.json"), b"[1]").unwrap();
        let with = fingerprint(&a).unwrap();
        std::fs::write(a.join("tokenizer.json"), b"[2]").unwrap();
        assert_ne!(fingerprint(&a).unwrap(), with);
        for d in [a, b] {
            std::fs::remove_dir_all(d).unwrap();
        }
    }

    #[test]
    fn linked_files_count_as_the_files_they_name() {
        // A policy version links its base's files and adds its own weights.
        let base = dir("base");
        std::fs::write(base.join("config.json"), b"{}").unwrap();
        std::fs::write(base.join("onnx/decoder.onnx"), b"weights v0").unwrap();
        let version = dir("version");
        std::fs::remove_dir(version.join("onnx")).unwrap();
        std::os::unix::fs::symlink(base.join("onnx"), version.join("onnx")).unwrap();
        std::os::unix::fs::symlink(base.join("config.json"), version.join("config.json")).unwrap();
        std::fs::write(version.join("weights.safetensors"), b"trained").unwrap();
        let v1 = fingerprint(&version).unwrap();
        assert_ne!(v1, fingerprint(&base).unwrap());
        // The optimiser's moments are not the policy: written or removed, the same version.
        std::fs::write(version.join(inference::version::OPTIMIZER), b"moments").unwrap();
        assert_eq!(fingerprint(&version).unwrap(), v1);
        std::fs::write(version.join("weights.safetensors"), b"trained more").unwrap();
        assert_ne!(fingerprint(&version).unwrap(), v1);
        // The linked config counts: changing it changes the version's fingerprint.
        let v2 = fingerprint(&version).unwrap();
        std::fs::write(base.join("config.json"), b"{\"v\": 2}").unwrap();
        assert_ne!(fingerprint(&version).unwrap(), v2);
        for d in [base, version] {
            std::fs::remove_dir_all(d).unwrap();
        }
    }
}
