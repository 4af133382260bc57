//! robots.txt (RFC 9309): the parser, the per-origin cache, and the verdict on a URL.
//!
//! - The group for our product token (matched case-insensitively, the line's value up to
//!   a `/` or space) applies, else the `*` group; groups naming the same agent combine.
//! - The longest matching pattern decides; on a tie `Allow` wins. `*` matches any run of
//!   characters, a final `$` anchors the end; an empty `Disallow` allows everything.
//! - A missing file (4xx) allows everything; an unreachable one (5xx, a network error,
//!   no answer) disallows everything, as RFC 9309 asks, and is asked again after a
//!   minute instead of a day.
//! - Only the first 500 KiB are read; `/robots.txt` itself is always allowed.
//!
//! The file is a site's own text, so it is hostile input: patterns are matched by a
//! linear-time glob, nothing in it is ever run, and the cache keeps at most
//! [`MAX_ORIGINS`] origins.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a fetched robots.txt is kept.
const FRESH: Duration = Duration::from_secs(24 * 3600);
/// How long an unreachable one counts as disallowing everything before it is asked again.
const UNREACHABLE_FRESH: Duration = Duration::from_secs(60);
/// The most text read of one file.
const MAX_BYTES: usize = 500 * 1024;
/// Origins kept at once; past it the oldest entry is dropped.
pub(crate) const MAX_ORIGINS: usize = 10_000;

/// What fetching an origin's robots.txt gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fetched {
    /// A 2xx answer's text.
    Found(String),
    /// A 4xx answer: there are no rules.
    Missing,
    /// A 5xx answer, a network error, or none in time.
    Unreachable(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    allow: bool,
    pattern: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Group {
    agents: Vec<String>,
    rules: Vec<Rule>,
}

/// An origin's rules, as they apply to one product token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rules {
    /// Everything is allowed.
    All,
    /// Nothing is (unreachable), with why.
    Nothing(String),
    /// These, longest match first decides.
    Some(Vec<(bool, String)>),
}

/// The groups of a robots.txt text.
fn parse(text: &str) -> Vec<Group> {
    let text = match text.char_indices().nth(MAX_BYTES) {
        Some((i, _)) => &text[..i],
        None => text,
    };
    let mut groups: Vec<Group> = Vec::new();
    let mut in_agents = false;
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or_default();
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim().to_ascii_lowercase(), value.trim());
        match key.as_str() {
            "user-agent" => {
                if !in_agents {
                    groups.push(Group::default());
                    in_agents = true;
                }
                let token = value
                    .split(['/', ' ', '\t'])
                    .next()
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                if let Some(g) = groups.last_mut() {
                    g.agents.push(token);
                }
            }
            "allow" | "disallow" => {
                in_agents = false;
                // Rules before any user-agent line belong to no group.
                let Some(g) = groups.last_mut() else {
                    continue;
                };
                if value.is_empty() {
                    continue;
                }
                g.rules.push(Rule {
                    allow: key == "allow",
                    pattern: value.to_string(),
                });
            }
            // Sitemap, crawl-delay and the like: not rules.
            _ => {}
        }
    }
    groups
}

/// The rules of `text` for `agent` (its groups, else the `*` groups).
pub(crate) fn rules_for(text: &str, agent: &str) -> Rules {
    let groups = parse(text);
    let agent = agent.to_ascii_lowercase();
    let pick = |name: &str| -> Vec<(bool, String)> {
        groups
            .iter()
            .filter(|g| g.agents.iter().any(|a| a == name))
            .flat_map(|g| g.rules.iter().map(|r| (r.allow, r.pattern.clone())))
            .collect()
    };
    let named = groups.iter().any(|g| g.agents.contains(&agent));
    let rules = if named { pick(&agent) } else { pick("*") };
    match rules.is_empty() {
        true => Rules::All,
        false => Rules::Some(rules),
    }
}

impl Rules {
    /// `Err(why)` when `path` (path and query, from `/`) must not be fetched.
    pub(crate) fn check(&self, path: &str) -> Result<(), String> {
        if path == "/robots.txt" {
            return Ok(());
        }
        match self {
            Rules::All => Ok(()),
            Rules::Nothing(why) => Err(format!(
                "robots.txt could not be read ({why}), which disallows everything"
            )),
            Rules::Some(rules) => {
                let best = rules
                    .iter()
                    .filter(|(_, p)| matches(p, path))
                    .max_by_key(|(allow, p)| (p.len(), *allow));
                match best {
                    Some((false, p)) => Err(format!("disallowed by robots.txt (Disallow: {p})")),
                    _ => Ok(()),
                }
            }
        }
    }
}

/// Whether robots.txt pattern `p` matches the start of `path` (`*` any run, a final `$`
/// the end). Iterative with one backtrack point: linear for practical patterns, never
/// recursive, whatever a hostile file holds.
fn matches(p: &str, path: &str) -> bool {
    let (p, anchored) = match p.strip_suffix('$') {
        Some(rest) => (rest, true),
        None => (p, false),
    };
    let (p, t) = (p.as_bytes(), path.as_bytes());
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    loop {
        if pi == p.len() && (!anchored || ti == t.len()) {
            return true;
        }
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && ti < t.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star
            && st < t.len()
        {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
}

/// An origin's entry: filled once by whoever asks first, while later askers wait for it.
struct Entry {
    cell: tokio::sync::OnceCell<(Instant, Duration, Arc<Rules>)>,
    created: Instant,
}

/// The rules of every origin seen, for one product token.
pub(crate) struct RobotsCache {
    agent: String,
    map: Mutex<HashMap<String, Arc<Entry>>>,
}

impl RobotsCache {
    pub(crate) fn new(agent: &str) -> RobotsCache {
        RobotsCache {
            agent: agent.to_string(),
            map: Mutex::default(),
        }
    }

    /// `origin`'s rules, fetched by `fetch` when not known or stale. Returns whether this
    /// call fetched.
    pub(crate) async fn rules<F>(&self, origin: &str, fetch: F) -> (Arc<Rules>, bool)
    where
        F: std::future::Future<Output = Fetched>,
    {
        let entry = {
            let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
            let stale = map.get(origin).is_some_and(|e| {
                e.cell
                    .get()
                    .is_some_and(|(at, fresh, _)| at.elapsed() > *fresh)
            });
            if stale {
                map.remove(origin);
            }
            if !map.contains_key(origin) && map.len() >= MAX_ORIGINS {
                let oldest = map
                    .iter()
                    .min_by_key(|(_, e)| e.created)
                    .map(|(k, _)| k.clone());
                if let Some(k) = oldest {
                    map.remove(&k);
                }
            }
            map.entry(origin.to_string())
                .or_insert_with(|| {
                    Arc::new(Entry {
                        cell: tokio::sync::OnceCell::new(),
                        created: Instant::now(),
                    })
                })
                .clone()
        };
        let mut fetched = false;
        let (_, _, rules) = entry
            .cell
            .get_or_init(|| async {
                fetched = true;
                let (rules, fresh) = match fetch.await {
                    Fetched::Found(text) => (rules_for(&text, &self.agent), FRESH),
                    Fetched::Missing => (Rules::All, FRESH),
                    Fetched::Unreachable(why) => (Rules::Nothing(why), UNREACHABLE_FRESH),
                };
                (Instant::now(), fresh, Arc::new(rules))
            })
            .await;
        (rules.clone(), fetched)
    }
}

/// The origin (`scheme://host[:port]`) and the path with query of a web URL.
pub(crate) fn split(url: &str) -> Option<(String, String)> {
    let u = url::Url::parse(url).ok()?;
    if !matches!(u.scheme(), "http" | "https") {
        return None;
    }
    let origin = u.origin().ascii_serialization();
    let path = match u.query() {
        Some(q) => format!("{}?{q}", u.path()),
        None => u.path().to_string(),
    };
    Some((origin, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "\
# a comment
Disallow: /before-any-group
User-agent: *
Disallow: /private
Allow: /private/open

User-agent: SurfGym/2.0
User-agent: other
Disallow: /secret   # ours
Allow: /secret/ok$
Disallow: /*.pdf$
Disallow:

User-agent: surfgym
Disallow: /also
Sitemap: https://example.com/sitemap.xml
";

    #[test]
    fn our_group_applies_else_the_star_group() {
        let ours = rules_for(FILE, "surfgym");
        assert!(ours.check("/private/x").is_ok(), "the * group is not ours");
        let e = ours.check("/secret/x").unwrap_err();
        assert!(e.contains("Disallow: /secret"), "{e}");
        assert!(ours.check("/secret/ok").is_ok(), "the longer Allow wins");
        assert!(ours.check("/secret/ok/more").is_err(), "$ anchors the end");
        assert!(ours.check("/doc/a.pdf").is_err());
        assert!(ours.check("/doc/a.pdf?x").is_ok());
        assert!(ours.check("/also").is_err(), "groups of one agent combine");
        assert!(ours.check("/before-any-group").is_ok());
        assert!(ours.check("/robots.txt").is_ok());
        let anyone = rules_for(FILE, "somebot");
        assert!(anyone.check("/private/x").is_err());
        assert!(anyone.check("/private/open/y").is_ok());
        assert!(anyone.check("/secret").is_ok());
        assert_eq!(rules_for("", "surfgym"), Rules::All);
        assert_eq!(rules_for("User-agent: *\nDisallow:\n", "x"), Rules::All);
    }

    #[test]
    fn ties_go_to_allow_and_wildcards_match_runs() {
        let r = rules_for("User-agent: *\nDisallow: /a\nAllow: /a\n", "x");
        assert!(r.check("/a").is_ok());
        assert!(matches("/*/b*c", "/x/yy/bzzc/d"));
        assert!(!matches("/*/b*c$", "/x/bzzc/d"));
        assert!(matches("*", "/anything"));
        // A hostile pattern against a long path ends at once.
        let p = "/".to_string() + &"a*".repeat(200) + "b";
        let t = "/".to_string() + &"a".repeat(5000);
        let t0 = Instant::now();
        assert!(!matches(&p, &t));
        assert!(t0.elapsed() < Duration::from_secs(2));
    }

    #[tokio::test]
    async fn the_cache_fetches_each_origin_once_and_unreachable_disallows_all() {
        let cache = RobotsCache::new("surfgym");
        let (r, fetched) = cache
            .rules("http://a.example", async {
                Fetched::Found("User-agent: *\nDisallow: /x\n".into())
            })
            .await;
        assert!(fetched && r.check("/x").is_err());
        let (_, fetched) = cache
            .rules("http://a.example", async { panic!("asked again") })
            .await;
        assert!(!fetched);
        let (r, _) = cache
            .rules("http://b.example", async { Fetched::Missing })
            .await;
        assert!(r.check("/x").is_ok());
        let (r, _) = cache
            .rules("http://c.example", async {
                Fetched::Unreachable("HTTP 503".into())
            })
            .await;
        let e = r.check("/").unwrap_err();
        assert!(e.contains("HTTP 503"), "{e}");
        assert_eq!(
            split("http://a.example:8080/p/q?x=1#f"),
            Some(("http://a.example:8080".into(), "/p/q?x=1".into()))
        );
        assert_eq!(split("data:text/html,hi"), None);
    }
}
