//! The values of the endpoint table's placeholders, found through the API itself (so a
//! `--url` server is measured on its own data).

use std::collections::BTreeMap;

use anyhow::{Context, bail};
use serde_json::Value;

/// Placeholder values by name.
pub struct Targets(pub BTreeMap<&'static str, String>);

async fn json(client: &reqwest::Client, base: &str, path: &str) -> anyhow::Result<Value> {
    let r = client
        .get(format!("{base}{path}"))
        .send()
        .await
        .with_context(|| format!("GET {path}"))?;
    if !r.status().is_success() {
        bail!("GET {path}: {}", r.status());
    }
    Ok(r.json().await?)
}

fn items(v: &Value) -> &[Value] {
    v["items"].as_array().map(Vec::as_slice).unwrap_or(&[])
}

/// The longest word of `text` (letters only), as a search that matches what it came from.
fn longest_word(text: &str) -> Option<String> {
    text.split(|c: char| !c.is_alphabetic())
        .max_by_key(|w| w.chars().count())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// Two episodes of one task among `eps`.
fn same_task(eps: &[Value]) -> Option<(String, String)> {
    for (i, a) in eps.iter().enumerate() {
        let b = eps[i + 1..]
            .iter()
            .find(|b| b["task_id"].is_string() && b["task_id"] == a["task_id"]);
        if let (Some(x), Some(y)) = (a["id"].as_str(), b.and_then(|b| b["id"].as_str())) {
            return Some((x.to_string(), y.to_string()));
        }
    }
    None
}

impl Targets {
    /// Looks the data up.
    pub async fn find(client: &reqwest::Client, base: &str) -> anyhow::Result<Targets> {
        let mut t = BTreeMap::new();
        let mut campaigns: Vec<(i64, String)> = Vec::new();
        let mut offset = 0;
        loop {
            let page = json(
                client,
                base,
                &format!("/api/campaigns?limit=500&offset={offset}"),
            )
            .await?;
            for c in items(&page) {
                if let (Some(id), Some(n)) = (c["id"].as_str(), c["total_episodes"].as_i64()) {
                    if campaigns.is_empty() {
                        t.insert("recent", id.to_string());
                    }
                    campaigns.push((n, id.to_string()));
                }
            }
            offset += 500;
            if offset >= page["total"].as_i64().unwrap_or(0) {
                break;
            }
        }
        campaigns.sort_by_key(|c| std::cmp::Reverse(c.0));
        if let Some((n, id)) = campaigns.first() {
            t.insert("campaign", id.clone());
            t.insert("deep", (n * 9 / 10).to_string());
            let eps = json(
                client,
                base,
                &format!("/api/episodes?campaign={id}&status=finished&limit=100"),
            )
            .await?;
            let eps = items(&eps);
            if let Some(e) = eps.first() {
                if let Some(id) = e["id"].as_str() {
                    t.insert("episode", id.to_string());
                }
                if let Some(task) = e["task_id"].as_str() {
                    let task = json(client, base, &format!("/api/tasks/{task}")).await?;
                    if let Some(w) = task["instruction"].as_str().and_then(longest_word) {
                        t.insert("word", w);
                    }
                }
            }
            if let Some((a, b)) = same_task(eps) {
                t.insert("pair_a", a);
                t.insert("pair_b", b);
            }
        }
        if let Some((_, id)) = campaigns.get(1) {
            t.insert("other", id.clone());
        }
        let all = json(client, base, "/api/episodes?limit=1").await?;
        t.insert(
            "deep_all",
            (all["total"].as_i64().unwrap_or(0) * 9 / 10).to_string(),
        );
        let tasks = json(client, base, "/api/tasks?limit=1").await?;
        if let Some(id) = items(&tasks).first().and_then(|x| x["id"].as_str()) {
            t.insert("task", id.to_string());
        }
        let runs = json(client, base, "/api/training-runs?limit=1").await?;
        if let Some(id) = items(&runs).first().and_then(|x| x["id"].as_str()) {
            t.insert("run", id.to_string());
        }
        Ok(Targets(t))
    }

    /// `path` with its placeholders filled, or the first one without a value.
    pub fn fill(&self, path: &str) -> Result<String, String> {
        let mut out = String::new();
        let mut rest = path;
        while let Some(open) = rest.find('{') {
            let close = rest[open..]
                .find('}')
                .map(|c| open + c)
                .ok_or_else(|| format!("unclosed placeholder in {path}"))?;
            let name = &rest[open + 1..close];
            let value = self
                .0
                .get(name)
                .ok_or_else(|| format!("no {{{name}}} in this data"))?;
            out.push_str(&rest[..open]);
            out.push_str(value);
            rest = &rest[close + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_fill_or_name_the_missing_one() {
        let t = Targets(BTreeMap::from([("campaign", "c1".to_string())]));
        assert_eq!(
            t.fill("/api/campaigns/{campaign}/policies").unwrap(),
            "/api/campaigns/c1/policies"
        );
        assert_eq!(t.fill("/metrics").unwrap(), "/metrics");
        assert_eq!(t.fill("/x/{run}").unwrap_err(), "no {run} in this data");
    }

    #[test]
    fn a_search_word_and_a_pair_of_rollouts_come_from_the_data() {
        assert_eq!(
            longest_word("Find item 90 (synthetic task 90).").as_deref(),
            Some("synthetic")
        );
        assert_eq!(longest_word("42 ..."), None);
        let eps = serde_json::json!([
            {"id": "e1", "task_id": "t1"},
            {"id": "e2", "task_id": "t2"},
            {"id": "e3", "task_id": "t2"}
        ]);
        let eps = eps.as_array().unwrap();
        assert_eq!(same_task(eps), Some(("e2".to_string(), "e3".to_string())));
        assert_eq!(same_task(&eps[..2]), None);
    }

    #[test]
    fn every_endpoint_names_only_known_placeholders() {
        let known = [
            "campaign", "recent", "other", "episode", "task", "run", "deep", "deep_all", "word",
            "pair_a", "pair_b",
        ];
        let t = Targets(known.iter().map(|k| (*k, "x".to_string())).collect());
        for e in super::super::endpoints::ENDPOINTS {
            for p in e.first.iter().chain(e.then) {
                t.fill(p).unwrap_or_else(|m| panic!("{}: {m}", e.name));
            }
        }
    }
}
