//! The bundled practice websites: static files compiled into the binary, so the demo and
//! the tests work offline and identically everywhere. Serving them is the engine's job.

use include_dir::{Dir, include_dir};

static SITES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/sites");

/// One file of a practice site.
#[derive(Debug, Clone, Copy)]
pub struct SiteFile {
    /// Contents.
    pub bytes: &'static [u8],
    /// MIME type from the extension.
    pub mime: &'static str,
}

/// The names of the bundled sites (`booking`, `shop`, `wiki`), sorted.
pub fn site_names() -> Vec<&'static str> {
    let mut names: Vec<&str> = SITES
        .dirs()
        .filter_map(|d| d.path().file_name()?.to_str())
        .collect();
    names.sort_unstable();
    names
}

/// The file at a URL path of a site (`/` and `/dir/` mean `index.html`); `None` for paths
/// that do not exist or try to leave the site.
pub fn site_file(site: &str, url_path: &str) -> Option<SiteFile> {
    let rel = url_path.trim_start_matches('/');
    if rel
        .split('/')
        .any(|seg| seg == ".." || seg.starts_with('.'))
        || site.contains(['/', '.'])
    {
        return None;
    }
    let rel = if rel.is_empty() || rel.ends_with('/') {
        format!("{rel}index.html")
    } else {
        rel.to_string()
    };
    let file = SITES.get_file(format!("{site}/{rel}"))?;
    Some(SiteFile {
        bytes: file.contents(),
        mime: mime_for(&rel),
    })
}

fn mime_for(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or_default() {
        "html" | "htm" => "text/html; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "js" => "text/javascript; charset=utf-8",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "ico" => "image/x-icon",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_cannot_escape_a_site() {
        let site = site_names()[0];
        assert!(site_file(site, "/").is_some(), "index");
        assert!(site_file(site, "/../Cargo.toml").is_none());
        assert!(site_file(site, "/.hidden").is_none());
        assert!(site_file("..", "/tasks/Cargo.toml").is_none());
        assert!(site_file(site, "/no-such-page.html").is_none());
        assert_eq!(
            site_file(site, "/index.html").unwrap().mime,
            "text/html; charset=utf-8"
        );
    }
}
