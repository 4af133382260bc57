//! The practice sites this process serves, and tasks' URLs moved onto them.
//!
//! Every surfgym process (`serve`, `worker`, `train run`, `bench`) serves the bundled
//! sites and MiniWoB++ on ports of its own and registers their tasks with those ports. On
//! one database the last process to register would otherwise own every task's URLs: the
//! others' episodes would open its ports, and fail once it exits. So a registration
//! records the bases it resolved the task against (`tasks.site_bases`), and a process that
//! serves a site itself reads every such task with its own base in place of the recorded
//! one: start URL, setup, reference solution and rubric alike.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

/// Site → base URL, shared by a store's clones.
#[derive(Clone, Debug, Default)]
pub(crate) struct LocalSites(Arc<RwLock<BTreeMap<String, String>>>);

impl LocalSites {
    /// Adds (or moves) the sites this process serves.
    pub(crate) fn serve(&self, bases: &BTreeMap<String, String>) {
        let mut m = self.0.write().unwrap_or_else(|p| p.into_inner());
        for (site, base) in bases {
            m.insert(site.clone(), base.trim_end_matches('/').to_string());
        }
    }

    /// What to replace in a task registered against `recorded`: (recorded base, local
    /// base) for each site served here under another base.
    fn moves(&self, recorded: &serde_json::Value) -> Vec<(String, String)> {
        let Some(recorded) = recorded.as_object() else {
            return Vec::new();
        };
        let local = self.0.read().unwrap_or_else(|p| p.into_inner());
        recorded
            .iter()
            .filter_map(|(site, old)| {
                let old = old.as_str()?.trim_end_matches('/');
                let new = local.get(site)?;
                (!old.is_empty() && old != new).then(|| (old.to_string(), new.clone()))
            })
            .collect()
    }

    /// `value` (a task's spec, or any of its URLs) with each recorded base of a site
    /// served here replaced by the local one.
    pub(crate) fn localize(
        &self,
        value: serde_json::Value,
        recorded: Option<&serde_json::Value>,
    ) -> serde_json::Value {
        let moves = recorded.map(|r| self.moves(r)).unwrap_or_default();
        if moves.is_empty() {
            return value;
        }
        let mut text = value.to_string();
        for (old, new) in &moves {
            text = replace_base(&text, old, new);
        }
        serde_json::from_str(&text).unwrap_or(value)
    }
}

/// `text` with every `old` that is a whole base (not followed by more of a host or port:
/// `:8000` must not match inside `:80001`) replaced by `new`.
fn replace_base(text: &str, old: &str, new: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(old) {
        let after = &rest[i + old.len()..];
        let whole = !after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '.' || c == '-');
        out.push_str(&rest[..i]);
        out.push_str(if whole { new } else { old });
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn recorded_bases_of_sites_served_here_become_the_local_ones() {
        let local = LocalSites::default();
        local.serve(&BTreeMap::from([
            ("shop".to_string(), "http://127.0.0.1:5001/".to_string()),
            ("wiki".to_string(), "http://127.0.0.1:5002".to_string()),
        ]));
        let spec = json!({
            "start_url": "http://127.0.0.1:4001/cart",
            "setup": [{"goto": "http://127.0.0.1:4002/page"}],
            "rubric": {"url": "http://127.0.0.1:40011/x", "other": "http://example.com:4001/"},
        });
        let recorded = json!({"shop": "http://127.0.0.1:4001", "wiki": "http://127.0.0.1:4002",
                              "booking": "http://127.0.0.1:4003"});
        let moved = local.localize(spec.clone(), Some(&recorded));
        assert_eq!(moved["start_url"], "http://127.0.0.1:5001/cart");
        assert_eq!(moved["setup"][0]["goto"], "http://127.0.0.1:5002/page");
        // Another port that starts alike, and another host, are left alone.
        assert_eq!(moved["rubric"]["url"], "http://127.0.0.1:40011/x");
        assert_eq!(moved["rubric"]["other"], "http://example.com:4001/");
        // A task registered as given (no recorded bases) is read as stored.
        assert_eq!(local.localize(spec.clone(), None), spec);
        // Nothing served here: as stored.
        assert_eq!(
            LocalSites::default().localize(spec.clone(), Some(&recorded)),
            spec
        );
    }
}
