//! Pages that turn the agent away: a CAPTCHA, a bot wall ("checking your browser"), an
//! access-denied or rate-limit answer, a login wall on a page the task did not ask to log
//! into. Such an episode says nothing about the agent, so it ends as an infrastructure
//! outcome (`blocked`, with its reason): retried under the campaign's attempts, never
//! scored, never trained on.
//!
//! Rules only, on what every observation reads of the top document
//! ([`PageSignals`]): its HTTP status, CAPTCHA widgets, password fields, a short page's
//! text. Only pages of the task's own site count: a page the agent wandered to elsewhere is
//! the agent's doing (and a hostile page there cannot hide a failure by posing as a wall).
//! A login wall counts only on the start page, before the agent has acted, and only when
//! the instruction says nothing of logging in.

use std::fmt;
use std::sync::Arc;

use spaces::PageSignals;

use crate::judge::ModelJudge;

/// How an episode treats pages that turn the agent away.
#[derive(Clone, Default)]
pub enum BlockCheck {
    /// Scored as the agent's pages.
    Off,
    /// The rules below end the episode as blocked.
    #[default]
    Rules,
    /// The rules find, the model judge confirms with the page's screenshot: a page it
    /// does not see as a wall goes on as an ordinary page.
    Confirmed(Arc<ModelJudge>),
}

/// Why a page turned the agent away.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockReason {
    /// A CAPTCHA widget or a page asking to prove the visitor is human.
    Captcha,
    /// A bot-detection interstitial ("checking your browser", "just a moment").
    BotWall,
    /// 401, 403 or 451, or a page saying access is denied.
    AccessDenied,
    /// 429: too many requests.
    RateLimited,
    /// A sign-in form in the way of a task that did not ask to sign in.
    LoginWall,
}

impl BlockReason {
    /// The name as stored in reasons and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            BlockReason::Captcha => "captcha",
            BlockReason::BotWall => "bot_wall",
            BlockReason::AccessDenied => "access_denied",
            BlockReason::RateLimited => "rate_limited",
            BlockReason::LoginWall => "login_wall",
        }
    }
}

impl fmt::Display for BlockReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A page that turned the agent away.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// Why.
    pub reason: BlockReason,
    /// The page.
    pub url: String,
    /// What gave it away: the status, the marker found.
    pub evidence: String,
}

impl fmt::Display for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {} ({})", self.reason, self.url, self.evidence)
    }
}

/// Where a page was observed, for the rules that depend on it.
pub struct Seen<'a> {
    /// The page's URL.
    pub url: &'a str,
    /// The page's title.
    pub title: &'a str,
    /// The task's start URL: only pages of its site count.
    pub start_url: &'a url::Url,
    /// Whether this is the start page, before the agent's first action.
    pub at_start: bool,
    /// The instruction in force.
    pub instruction: &'a str,
}

/// Markers of bot walls, in lower case, as they appear in a short page's text or title.
const BOT_WALL: &[&str] = &[
    "checking your browser",
    "checking if the site connection is secure",
    "verifying you are human",
    "just a moment...",
    "ddos protection by",
    "please enable javascript and cookies to continue",
    "press & hold",
    "our systems have detected unusual traffic",
    "request unsuccessful. incapsula",
    "pardon our interruption",
];

const CAPTCHA: &[&str] = &[
    "i'm not a robot",
    "i am not a robot",
    "verify you are human",
    "prove you are human",
    "complete the captcha",
    "solve the captcha",
    "enter the characters you see",
];

const DENIED: &[&str] = &[
    "access denied",
    "403 forbidden",
    "you don't have permission to access",
    "you do not have permission to access",
    "your access to this site has been limited",
    "you have been blocked",
    "sorry, you have been blocked",
];

const RATE_LIMITED: &[&str] = &["too many requests", "rate limit exceeded"];

const LOGIN: &[&str] = &[
    "sign in to continue",
    "log in to continue",
    "login to continue",
    "please log in",
    "please sign in",
    "you must be logged in",
    "you need to sign in",
    "login required",
    "sign in required",
];

/// Words in an instruction that ask for signing in: then a sign-in form is the task.
const ASKS_TO_LOG_IN: &[&str] = &[
    "log in", "login", "log into", "sign in", "signin", "password", "account", "register",
    "sign up",
];

/// Judges one observation: the block it shows, if any.
pub fn detect(signals: &PageSignals, seen: &Seen<'_>) -> Option<Block> {
    if !same_site(seen.url, seen.start_url) {
        return None;
    }
    let block = |reason, evidence: String| {
        Some(Block {
            reason,
            url: seen.url.to_string(),
            evidence,
        })
    };
    match signals.status {
        Some(429) => return block(BlockReason::RateLimited, "HTTP 429".into()),
        Some(s @ (401 | 403 | 451)) => {
            return block(BlockReason::AccessDenied, format!("HTTP {s}"));
        }
        _ => {}
    }
    if signals.captcha {
        return block(BlockReason::Captcha, "a CAPTCHA widget".into());
    }
    // Only a short page is read: an interstitial is; a long article quoting "access
    // denied" is not one.
    let text = signals.short_text.as_deref().map(str::to_lowercase);
    let title = seen.title.to_lowercase();
    let marker = |list: &[&'static str]| {
        list.iter()
            .find(|m| title.contains(*m) || text.as_deref().is_some_and(|t| t.contains(*m)))
            .map(|m| format!("says {m:?}"))
    };
    let rules = [
        (BlockReason::Captcha, CAPTCHA),
        (BlockReason::BotWall, BOT_WALL),
        (BlockReason::RateLimited, RATE_LIMITED),
        (BlockReason::AccessDenied, DENIED),
    ];
    for (reason, list) in rules {
        if let Some(evidence) = marker(list) {
            return block(reason, evidence);
        }
    }
    if seen.at_start && signals.password_fields > 0 && !asks_to_log_in(seen.instruction) {
        let evidence = marker(LOGIN).or_else(|| {
            login_path(seen.url).then(|| "a password field on a sign-in address".to_string())
        });
        if let Some(evidence) = evidence {
            return block(BlockReason::LoginWall, evidence);
        }
    }
    None
}

/// The model judge's word on a block the rules found, from the page's screenshot: the
/// block (its evidence saying the judge confirmed it, or could not tell), or None when the
/// judge sees no wall. The judge can only take back what the rules found, never add a
/// block, so a page that talks to the judge can at most be scored as an ordinary page.
pub async fn confirm(
    judge: &ModelJudge,
    mut block: Block,
    screenshot: &[u8],
    seed: u64,
) -> Option<Block> {
    let question = format!(
        "A web agent was sent to this page to do a task. Automatic rules think the page turns \
         visitors away: {} ({}) at {}.\n\
         Look at the screenshot. Does the page stop a visitor from using the site: a CAPTCHA or \
         other human check, a bot check or \"checking your browser\" page, an access-denied or \
         too-many-requests page, or a sign-in wall?\n\
         Answer YES or NO first, then one short reason.",
        block.reason, block.evidence, block.url
    );
    let said = judge.ask(vec![screenshot.to_vec()], question, seed).await;
    let word = said.as_ref().map(|a| {
        a.split(|c: char| !c.is_alphabetic())
            .find(|w| !w.is_empty())
            .unwrap_or_default()
            .to_ascii_lowercase()
    });
    let name = judge.name();
    match word.as_deref() {
        Ok("yes") => block.evidence = format!("{}; confirmed by {name}", block.evidence),
        Ok("no") => {
            tracing::info!(url = block.url, reason = %block.reason, judge = name, "the judge sees no wall");
            return None;
        }
        Ok(_) => block.evidence = format!("{}; {name} could not tell", block.evidence),
        Err(e) => block.evidence = format!("{}; {name} failed: {e}", block.evidence),
    }
    Some(block)
}

fn asks_to_log_in(instruction: &str) -> bool {
    let i = instruction.to_lowercase();
    ASKS_TO_LOG_IN.iter().any(|w| i.contains(w))
}

fn login_path(url: &str) -> bool {
    let Ok(u) = url::Url::parse(url) else {
        return false;
    };
    let path = u.path().to_lowercase();
    ["login", "signin", "sign-in", "sign_in", "auth"]
        .iter()
        .any(|w| path.contains(w))
}

/// Whether `url` is on the start page's site: the same host, or hosts sharing their last
/// two labels (`www.shop.example` and `checkout.shop.example`); IP addresses and
/// single-label hosts must match whole.
fn same_site(url: &str, start: &url::Url) -> bool {
    let Ok(u) = url::Url::parse(url) else {
        return false;
    };
    match (u.host(), start.host()) {
        (Some(url::Host::Domain(a)), Some(url::Host::Domain(b))) => {
            let site = |h: &str| {
                let labels: Vec<&str> = h.trim_end_matches('.').rsplit('.').take(2).collect();
                labels.join(".").to_ascii_lowercase()
            };
            site(a) == site(b)
        }
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start() -> url::Url {
        url::Url::parse("https://www.shop.example/").unwrap()
    }

    fn seen<'a>(
        url: &'a str,
        start: &'a url::Url,
        at_start: bool,
        instruction: &'a str,
    ) -> Seen<'a> {
        Seen {
            url,
            title: "",
            start_url: start,
            at_start,
            instruction,
        }
    }

    fn text(t: &str) -> PageSignals {
        PageSignals {
            status: Some(200),
            short_text: Some(t.into()),
            ..Default::default()
        }
    }

    fn reason(signals: &PageSignals, s: &Seen<'_>) -> Option<BlockReason> {
        detect(signals, s).map(|b| b.reason)
    }

    #[test]
    fn statuses_widgets_and_interstitial_texts_are_told_apart() {
        let st = start();
        let s = seen("https://www.shop.example/p", &st, false, "Buy a mug.");
        let status = |code| PageSignals {
            status: Some(code),
            ..Default::default()
        };
        assert_eq!(reason(&status(429), &s), Some(BlockReason::RateLimited));
        assert_eq!(reason(&status(403), &s), Some(BlockReason::AccessDenied));
        assert_eq!(reason(&status(200), &s), None);
        assert_eq!(
            reason(&status(404), &s),
            None,
            "a missing page is the agent's"
        );
        assert_eq!(reason(&status(500), &s), None);
        let widget = PageSignals {
            captcha: true,
            ..Default::default()
        };
        assert_eq!(reason(&widget, &s), Some(BlockReason::Captcha));
        for (t, r) in [
            (
                "Checking your browser before accessing shop.example.",
                BlockReason::BotWall,
            ),
            (
                "Please verify you are human to continue.",
                BlockReason::Captcha,
            ),
            ("Access Denied. Reference #18.2f", BlockReason::AccessDenied),
            ("Too Many Requests", BlockReason::RateLimited),
        ] {
            assert_eq!(reason(&text(t), &s), Some(r), "{t}");
        }
        assert_eq!(reason(&text("Blue mug, 12 EUR. Add to cart."), &s), None);
        // A long page is never read whole (its text is not given), however it begins.
        let long = PageSignals {
            status: Some(200),
            short_text: None,
            ..Default::default()
        };
        assert_eq!(reason(&long, &s), None);
        let b = detect(&status(403), &s).unwrap();
        assert_eq!(
            b.to_string(),
            "access_denied at https://www.shop.example/p (HTTP 403)"
        );
    }

    #[test]
    fn only_the_tasks_own_site_counts() {
        let st = start();
        let wall = text("Just a moment...");
        for (url, blocked) in [
            ("https://www.shop.example/x", true),
            ("https://checkout.shop.example/x", true),
            ("https://elsewhere.example/x", false),
            ("not a url", false),
        ] {
            let s = seen(url, &st, false, "Buy a mug.");
            assert_eq!(detect(&wall, &s).is_some(), blocked, "{url}");
        }
        let local = url::Url::parse("http://127.0.0.1:8080/").unwrap();
        let s = seen("http://127.0.0.1:8080/wall", &local, false, "x");
        assert!(detect(&wall, &s).is_some());
        let s = seen("http://127.0.0.2:8080/wall", &local, false, "x");
        assert!(detect(&wall, &s).is_none());
    }

    #[test]
    fn a_login_wall_is_one_only_at_the_start_of_a_task_that_does_not_ask_to_log_in() {
        let st = start();
        let form = PageSignals {
            status: Some(200),
            password_fields: 1,
            short_text: Some("Please sign in to continue. Email Password".into()),
            ..Default::default()
        };
        let at = |instruction| seen("https://www.shop.example/orders", &st, true, instruction);
        assert_eq!(
            reason(&form, &at("Find my last order.")),
            Some(BlockReason::LoginWall)
        );
        assert_eq!(
            reason(&form, &at("Log in as alice and find her last order.")),
            None
        );
        let later = seen(
            "https://www.shop.example/orders",
            &st,
            false,
            "Find my last order.",
        );
        assert_eq!(reason(&form, &later), None, "the agent went there");
        // A sign-in address gives it away without the words.
        let quiet = PageSignals {
            status: Some(200),
            password_fields: 1,
            short_text: Some("Email Password Submit".into()),
            ..Default::default()
        };
        let s = seen(
            "https://www.shop.example/account/login?next=/orders",
            &st,
            true,
            "Find my order.",
        );
        assert_eq!(reason(&quiet, &s), Some(BlockReason::LoginWall));
        let s = seen(
            "https://www.shop.example/newsletter",
            &st,
            true,
            "Find my order.",
        );
        assert_eq!(
            reason(&quiet, &s),
            None,
            "a password field alone is not a wall"
        );
    }
}
