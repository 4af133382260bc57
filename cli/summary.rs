//! The end-of-campaign summary table.

use std::collections::BTreeMap;

use store::{BreakdownRow, EpisodeFilter, Store};
use uuid::Uuid;

#[derive(Default)]
struct Acc {
    episodes: i64,
    successes: i64,
    score: f64,
    steps: f64,
}

impl Acc {
    fn add(&mut self, r: &BreakdownRow) {
        self.episodes += r.episodes;
        self.successes += r.successes;
        self.score += r.mean_score * r.episodes as f64;
        self.steps += r.mean_steps * r.episodes as f64;
    }

    fn line(&self, label: &str) -> String {
        let n = self.episodes.max(1) as f64;
        format!(
            "  {label:<18} {:>8} {:>8.1}% {:>10.2} {:>10.1}",
            self.episodes,
            100.0 * self.successes as f64 / n,
            self.score / n,
            self.steps / n
        )
    }
}

/// Prints each campaign's outcome by difficulty and by site.
pub async fn print(store: &Store, campaigns: &[Uuid]) -> anyhow::Result<()> {
    for id in campaigns {
        let Some(view) = store.get_campaign(*id).await? else {
            continue;
        };
        let rows = store.campaign_breakdown(*id).await?;
        println!();
        println!(
            "{} — policy {} — {} ({} episodes, {} infrastructure failures)",
            view.name, view.policy, view.status, view.total_episodes, view.counts.failed
        );
        // Which model produced the data; several mean workers resolved the policy name
        // to different models or settings.
        let policies = store.campaign_policies(*id).await?;
        if policies.len() > 1 || policies.iter().any(|u| u.card.model.is_some()) {
            for u in &policies {
                println!("  ran under {} ({} episodes)", u.card.label(), u.episodes);
            }
        }
        println!(
            "  {:<18} {:>8} {:>9} {:>10} {:>10}",
            "", "episodes", "success", "mean score", "mean steps"
        );
        let mut by_difficulty: BTreeMap<u8, (String, Acc)> = BTreeMap::new();
        let mut by_site: BTreeMap<String, Acc> = BTreeMap::new();
        let mut all = Acc::default();
        for r in &rows {
            let order = match r.difficulty.as_str() {
                "easy" => 0,
                "medium" => 1,
                _ => 2,
            };
            by_difficulty
                .entry(order)
                .or_insert_with(|| (r.difficulty.clone(), Acc::default()))
                .1
                .add(r);
            by_site.entry(r.site.clone()).or_default().add(r);
            all.add(r);
        }
        for (name, acc) in by_difficulty.values() {
            println!("{}", acc.line(name));
        }
        for (site, acc) in &by_site {
            println!("{}", acc.line(&format!("site {site}")));
        }
        println!("{}", all.line("all"));
        if let Some(line) = judge_line(&view) {
            println!("{line}");
        }
    }
    Ok(())
}

/// Prints why each unsuccessful episode of a campaign failed; returns how many there were.
pub async fn print_failures(store: &Store, campaign: Uuid) -> anyhow::Result<usize> {
    let filter = EpisodeFilter {
        campaign: Some(campaign),
        ..Default::default()
    };
    let (episodes, _) = store.list_episodes(&filter, 10_000, 0).await?;
    let mut failures = 0;
    for e in episodes.iter().filter(|e| e.success != Some(true)) {
        failures += 1;
        println!();
        println!(
            "✗ {} ({}): {}",
            e.task_id,
            e.status,
            e.end_reason.as_deref().unwrap_or("-")
        );
        if let Some(err) = &e.last_error {
            println!("    infrastructure: {err}");
        }
        if let Some(d) = store.get_episode(e.id).await? {
            for s in d.steps.iter().filter(|s| s.core.action_error.is_some()) {
                println!(
                    "    step {} {}: {}",
                    s.idx,
                    s.core.action,
                    s.core.action_error.as_deref().unwrap_or_default()
                );
            }
            for v in d.verdicts.iter().filter(|v| v.passed == Some(false)) {
                println!("    fact {}: {} (saw: {})", v.fact_id, v.reason, v.evidence);
            }
        }
    }
    Ok(failures)
}

/// The model judge's cost against exhaustive verification, when the campaign used one.
pub fn judge_line(view: &store::CampaignView) -> Option<String> {
    (view.judge_facts > 0).then(|| {
        format!(
            "  model judge: {} calls made, {} for an exhaustive judge ({} facts in words); {} saved ({:.0}%)",
            view.judge_calls,
            view.judge_exhaustive_calls,
            view.judge_facts,
            view.judge_calls_saved,
            100.0 * view.judge_calls_saved as f64 / view.judge_exhaustive_calls.max(1) as f64
        )
    })
}

/// What the ONNX policy of this process did with its prompts: tokens prefilled, taken from
/// the prefix cache (and how often a lookup hit), and shared by a batch's repeated rows.
/// None when no ONNX policy generated here.
pub fn policy_prompts_line() -> Option<String> {
    let m = &metrics::METRICS;
    let prefilled = m.prefill_tokens.get();
    let (cached, shared) = (m.prefill_tokens_cached.get(), m.prefill_tokens_saved.get());
    if prefilled + cached + shared == 0 {
        return None;
    }
    let (hits, lookups) = (m.prefix_cache_hits.get(), m.prefix_cache_lookups.get());
    let all = (prefilled + cached + shared) as f64;
    Some(format!(
        "policy prompts: {prefilled} tokens prefilled, {cached} from the prefix cache ({hits} of {lookups} lookups hit), \
         {shared} shared within batches: {:.0}% not computed again",
        100.0 * (cached + shared) as f64 / all
    ))
}
