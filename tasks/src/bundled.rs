//! The bundled task suite over the practice sites.
//!
//! Task files write `{{shop}}`, `{{wiki}}`, `{{booking}}` for the sites' base URLs, which
//! are only known once the sites are served; [`bundled_tasks`] fills them in.

use std::collections::BTreeMap;

use include_dir::{Dir, include_dir};

use crate::import::{ImportLine, parse_jsonl};

static BUNDLED: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/bundled");

/// The JSON Lines files directly in `dir`, by path.
pub(crate) fn jsonl_files<'a>(dir: &'a Dir<'a>) -> Vec<&'a include_dir::File<'a>> {
    let mut files: Vec<_> = dir
        .files()
        .filter(|f| f.path().extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort_by_key(|f| f.path().to_path_buf());
    files
}

/// One bundled task line, with the file it came from.
#[derive(Debug)]
pub struct BundledLine {
    /// File name, e.g. `shop.jsonl`.
    pub file: String,
    /// The parsed line.
    pub line: ImportLine,
}

/// Every bundled task, with `{{site}}` placeholders replaced by `bases[site]`
/// (a base URL without trailing slash).
pub fn bundled_tasks(bases: &BTreeMap<String, String>) -> Vec<BundledLine> {
    let mut out = Vec::new();
    for f in jsonl_files(&BUNDLED) {
        let mut text = f.contents_utf8().unwrap_or_default().to_string();
        for (site, base) in bases {
            text = text.replace(&format!("{{{{{site}}}}}"), base.trim_end_matches('/'));
        }
        let name = f.path().display().to_string();
        out.extend(parse_jsonl(&text).into_iter().map(|line| BundledLine {
            file: name.clone(),
            line,
        }));
    }
    out
}
