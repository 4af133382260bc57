//! How many versions behind an update each of its samples is. A run's versions are
//! numbered: the base model is 0, `v{i}` (published by iteration i) is i. An episode's
//! version is read from its stored policy card (the model directory's fingerprint, or its
//! name when the card has no fingerprint), so it does not matter which link the policy
//! followed. The staleness of a step is how many versions were published after the one
//! that produced its episode, up to the one the update starts from: (the parent's index)
//! − (the episode's), less the iterations in between that published nothing (their
//! update selected no sample), which changed no weights. With overlap, steps past the
//! bound are dropped (`too_stale`), and so are steps whose version cannot be told
//! (`unknown_version`), since their correction weight would be a guess. What is kept is
//! counted by staleness in the iteration's report and the version's lineage.

use std::collections::BTreeMap;
use std::path::Path;

use policy::traces::TraceEpisode;
use store::PolicyCard;

use crate::data::Collected;

/// A version of the run as its episodes' cards name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Known {
    /// 0 for the base model, i for `v{i}`.
    pub index: u32,
    /// The directory's name (cards record it as `model`).
    pub name: String,
    /// `policy::fingerprint` of the directory (cards record it).
    pub fingerprint: Option<String>,
}

/// Drop reason of steps more than the bound behind.
pub const TOO_STALE: &str = "too_stale";
/// Drop reason of steps whose version cannot be told.
pub const UNKNOWN_VERSION: &str = "unknown_version";

/// The run's versions up to `parent` (the base model and the published `dir/v1..v{parent}`),
/// oldest first: what an update from `v{parent}` can have samples of.
pub fn known(base: &Path, dir: &Path, parent: u32) -> Vec<Known> {
    // A served version is known by the name its episodes asked the server for.
    let one = |index: u32, path: &Path| match crate::served::name_of(path) {
        Ok(name) => Known {
            index,
            name,
            fingerprint: None,
        },
        Err(_) => Known {
            index,
            name: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            fingerprint: policy::fingerprint(path).ok(),
        },
    };
    let mut out = vec![one(0, base)];
    for i in 1..=parent {
        let v = dir.join(format!("v{i}"));
        if v.join(training::version::LINEAGE).is_file() || crate::served::is_served(&v) {
            out.push(one(i, &v));
        }
    }
    out
}

/// The index of the run version `card` names: by fingerprint when the card has one, else
/// by name; None when nothing (or more than one version) matches.
pub fn version_of(card: Option<&PolicyCard>, known: &[Known]) -> Option<u32> {
    let card = card?;
    let hits: Vec<u32> = match &card.fingerprint {
        Some(f) => known
            .iter()
            .filter(|k| k.fingerprint.as_ref() == Some(f))
            .map(|k| k.index)
            .collect(),
        None => {
            let name = card.model.as_deref()?;
            known
                .iter()
                .filter(|k| k.name == name)
                .map(|k| k.index)
                .collect()
        }
    };
    // Two versions with the same weights (an update that changed nothing) are the same
    // policy: the newest is as good an answer as any.
    match hits.as_slice() {
        [] => None,
        _ if card.fingerprint.is_some() => hits.iter().copied().max(),
        [one] => Some(*one),
        _ => None,
    }
}

/// How many of the `known` versions came after version `from`, up to `parent`'s (None
/// when either is not a known version, or `from` is newer, which cannot happen).
pub fn behind(known: &[Known], from: u32, parent: u32) -> Option<u32> {
    let rank = |v: u32| known.iter().position(|k| k.index == v);
    let (from, parent) = (rank(from)?, rank(parent)?);
    parent.checked_sub(from).map(|n| n as u32)
}

/// Each collected step's staleness against an update from version `parent` (None: its
/// version cannot be told).
pub fn of_steps(
    collected: &Collected,
    episodes: &[TraceEpisode],
    known: &[Known],
    parent: u32,
) -> Vec<Option<u32>> {
    collected
        .at
        .iter()
        .map(|&(e, _)| {
            version_of(episodes[e].policy.as_ref(), known).and_then(|v| behind(known, v, parent))
        })
        .collect()
}

/// Leaves out of `collected` the steps more than `max` versions behind and those of no
/// known version; returns how many went, by reason, and the staleness of the steps left.
pub fn drop_stale(
    collected: &mut Collected,
    staleness: Vec<Option<u32>>,
    max: u32,
) -> (BTreeMap<&'static str, usize>, Vec<Option<u32>>) {
    let mut dropped = BTreeMap::new();
    let mut left = Vec::with_capacity(staleness.len());
    let metas = std::mem::take(&mut collected.metas);
    let at = std::mem::take(&mut collected.at);
    for ((meta, at), s) in metas.into_iter().zip(at).zip(staleness) {
        let why = match s {
            None => Some(UNKNOWN_VERSION),
            Some(s) if s > max => Some(TOO_STALE),
            Some(_) => None,
        };
        if let Some(why) = why {
            *dropped.entry(why).or_default() += 1;
            continue;
        }
        collected.metas.push(meta);
        collected.at.push(at);
        left.push(s);
    }
    (dropped, left)
}

/// The kept steps (`kept`: index into the steps, advantage) counted by staleness, keyed by
/// its decimal text (JSON object keys); steps of unknown version under `unknown`.
pub fn histogram(staleness: &[Option<u32>], kept: &[(usize, f32)]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for &(i, _) in kept {
        let key = staleness
            .get(i)
            .copied()
            .flatten()
            .map_or_else(|| "unknown".to_string(), |s| s.to_string());
        *out.entry(key).or_default() += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use training::select::StepMeta;

    fn card(model: &str, fingerprint: Option<&str>) -> PolicyCard {
        let mut c = PolicyCard::new("run-sample", "onnx");
        c.model = Some(model.into());
        c.fingerprint = fingerprint.map(Into::into);
        c
    }

    fn versions() -> Vec<Known> {
        ["tiny-text", "v1", "v2"]
            .iter()
            .enumerate()
            .map(|(i, n)| Known {
                index: i as u32,
                name: n.to_string(),
                fingerprint: Some(format!("f{i}")),
            })
            .collect()
    }

    #[test]
    fn cards_map_to_versions_by_fingerprint_then_by_name() {
        let k = versions();
        assert_eq!(
            version_of(Some(&card("tiny-text", Some("f0"))), &k),
            Some(0)
        );
        assert_eq!(version_of(Some(&card("v2", Some("f2"))), &k), Some(2));
        // The fingerprint decides: a base model that happens to be called v1.
        assert_eq!(version_of(Some(&card("v1", Some("f0"))), &k), Some(0));
        assert_eq!(version_of(Some(&card("v1", None)), &k), Some(1));
        assert_eq!(version_of(Some(&card("v1", Some("other"))), &k), None);
        assert_eq!(version_of(Some(&card("v9", None)), &k), None);
        assert_eq!(version_of(None, &k), None);
        let mut twins = k.clone();
        twins[2].name = "v1".into();
        assert_eq!(
            version_of(Some(&card("v1", None)), &twins),
            None,
            "ambiguous"
        );
    }

    #[test]
    fn staleness_counts_the_versions_published_in_between() {
        let k = versions();
        assert_eq!(behind(&k, 0, 2), Some(2));
        assert_eq!(behind(&k, 2, 2), Some(0));
        assert_eq!(behind(&k, 2, 1), None, "newer than the parent");
        // Iteration 1 selected nothing: v2 was trained from the base model, one update on.
        let gap: Vec<Known> = k.into_iter().filter(|v| v.index != 1).collect();
        assert_eq!(behind(&gap, 0, 2), Some(1));
        assert_eq!(behind(&gap, 1, 2), None, "never published");
    }

    fn meta(i: usize) -> StepMeta {
        StepMeta {
            episode: format!("e{i}"),
            index: 0,
            episode_steps: 1,
            group: "g".into(),
            site: "s".into(),
            iteration: 0,
            reward: 1.0,
            success: true,
            screenshot: None,
            next_screenshot: None,
            answer: None,
        }
    }

    #[test]
    fn steps_past_the_bound_or_of_no_known_version_are_dropped_and_the_rest_counted() {
        let mut c = Collected::default();
        for i in 0..5 {
            c.metas.push(meta(i));
            c.at.push((i, 0));
        }
        let (dropped, left) = drop_stale(&mut c, vec![Some(0), Some(2), Some(1), None, Some(1)], 1);
        assert_eq!(dropped[TOO_STALE], 1);
        assert_eq!(dropped[UNKNOWN_VERSION], 1);
        assert_eq!(left, [Some(0), Some(1), Some(1)]);
        let eps: Vec<&str> = c.metas.iter().map(|m| m.episode.as_str()).collect();
        assert_eq!(eps, ["e0", "e2", "e4"]);
        assert_eq!(c.at, [(0, 0), (2, 0), (4, 0)]);
        let h = histogram(&left, &[(0, 1.0), (2, -1.0)]);
        assert_eq!(h, BTreeMap::from([("0".into(), 1), ("1".into(), 1)]));
    }
}
