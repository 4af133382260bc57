//! Keeps a `goto` landing where it was sent.
//!
//! A page can start a navigation of its own (a timer's `location.href = …`, a script's
//! redirect) while a navigation the session sent is on its way. Chromium ignores such a
//! navigation while ours is still waiting for its server, but once ours is ready to
//! commit, in another renderer, the old document still counts as the page's and a
//! navigation it starts then goes on beside ours and commits *after* it: the goto seems
//! to land, then the page it left takes the tab back (the soak found it in 27-32% of gotos
//! away from a page hopping across sites).
//!
//! Such a navigation is told apart by when it started and who asked for it:
//! - after ours and before our document committed (the main frame's
//!   `Page.frameStartedNavigating` and `Page.frameNavigated`, one session, so in the order
//!   the browser sent them), when no document of the new page existed to start it;
//! - or just after our commit (the old document is unloaded asynchronously and can still
//!   be heard from), with the old document's origin as its `Referer`, when our document
//!   has another origin (so the new page cannot have sent it).
//!
//! From the first navigation of ours on, the tab intercepts its document requests
//! (`Fetch`) and refuses those navigations' requests: they never reach their server,
//! nothing commits, no error page is shown. Navigations the new document starts (a
//! sign-in page forwarding to the account) are let go, as is everything while no
//! navigation of ours is in flight. (Interception stays on: switching it off raced with a
//! request being paused, which then waited for an answer that never came.)
//!
//! Ours committing right after such a refusal is sometimes not reported at all (Chromium
//! sends no `Page.frameNavigated` for it); the tab then takes the commit from the new
//! document's main world being created (`tab/watchers.rs`).
//!
//! What it cannot stop, left to land as before: a navigation that needs no request (a
//! page restored from the back-forward cache, `about:blank`, a `data:` URL); one started
//! just after our commit by an old document of the same origin, or one that sends no
//! `Referer` (`no-referrer`); and one whose start the tab's watcher takes in only after
//! our commit although the browser sent it first (a watcher several events behind).

use std::time::{Duration, Instant};

/// How long after our document commits the old one may still be heard from (its renderer
/// unloads it asynchronously; on a loaded machine that takes a while).
pub(crate) const AFTER_COMMIT: Duration = Duration::from_secs(1);

/// How long the request of a navigation under watch is waited for. Its request normally
/// follows its start within milliseconds; this only bounds the bookkeeping of one that
/// never makes one.
const KEPT: Duration = Duration::from_secs(30);

/// A URL without its fragment: the document it names.
pub(crate) fn without_fragment(url: &str) -> &str {
    url.split('#').next().unwrap_or_default()
}

/// The document a URL names, as Chromium reports a navigation's URL: canonical form,
/// no fragment. Unparsable URLs are compared as written.
pub(crate) fn document_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            u.set_fragment(None);
            u.into()
        }
        Err(_) => without_fragment(url).to_string(),
    }
}

/// The origin of a URL, if it has one that can be compared.
fn origin(url: &str) -> Option<url::Origin> {
    url::Url::parse(url)
        .ok()
        .map(|u| u.origin())
        .filter(url::Origin::is_tuple)
}

/// Whether a request whose `Referer` is `referer` was sent by the document at `left`
/// rather than the one at `landed` that replaced it. Under the default referrer policy a
/// same-origin request names the whole document, a cross-origin one only its origin, so
/// whole URLs are compared where they are whole and origins where the two documents'
/// origins differ; anything else (an origin-only `Referer` between documents of one
/// origin) cannot tell and is taken for the new document's.
fn sent_from(referer: &str, left: &str, landed: &str) -> bool {
    let Ok(r) = url::Url::parse(referer) else {
        return false;
    };
    let whole = r.path() != "/" || r.query().is_some();
    if whole {
        let r = document_url(referer);
        return r == document_url(left) && r != document_url(landed);
    }
    let left = origin(left);
    left.is_some() && left != origin(landed) && Some(r.origin()) == left
}

/// A navigation of ours on its way.
#[derive(Debug)]
struct Going {
    /// Where it goes ([`document_url`]).
    url: String,
    /// The document it leaves.
    left: String,
    /// Its loader id, once its start is seen.
    ours: Option<String>,
    /// When it was sent: past [`KEPT`] it is no longer waited for.
    sent: Instant,
    /// Whether a navigation of the page's started after it (see [`Landing::failed`]).
    crossed: bool,
    /// When the session stopped waiting for it: past [`AFTER_RELEASE`] it is no longer
    /// guarded (a navigation held back for good, say by a page asking to stay, reports no
    /// end, and must not leave the page's own navigations refused).
    released: Option<Instant>,
    /// When its request finished loading, its commit not yet seen.
    finished: Option<Instant>,
}

impl Going {
    fn expired(&self) -> bool {
        self.sent.elapsed() >= KEPT
            || self.released.is_some_and(|r| r.elapsed() >= AFTER_RELEASE)
            || self.finished.is_some_and(|f| f.elapsed() >= AFTER_COMMIT)
    }
}

/// How long a navigation of ours is still guarded after the session stopped waiting for
/// it at a commit of the page's own.
const AFTER_RELEASE: Duration = Duration::from_secs(3);

/// Our document, just committed, and the one it replaced.
#[derive(Debug)]
struct Landed {
    url: String,
    left: String,
    at: Instant,
}

/// A navigation under watch, by loader id (a navigation's request id is its loader id).
#[derive(Debug)]
enum Watched {
    /// Started between ours and our commit: the page left behind started it.
    Foreign,
    /// Started just after our commit: the old document's if its `Referer` says so.
    Suspect { left: String, landed: String },
}

/// What a tab knows of its navigations in flight; see the module doc.
#[derive(Debug, Default)]
pub(crate) struct Landing {
    going: Option<Going>,
    landed: Option<Landed>,
    watched: Vec<(String, Watched, Instant)>,
}

impl Landing {
    /// A navigation of ours to `url` is about to be sent from the document at `left`.
    pub(crate) fn begin(&mut self, url: &str, left: &str) {
        self.going = Some(Going {
            url: document_url(url),
            left: left.to_string(),
            ours: None,
            sent: Instant::now(),
            crossed: false,
            released: None,
            finished: None,
        });
        self.landed = None;
    }

    /// The session stopped waiting for it. Once its start was seen it is guarded on until
    /// it commits or fails: the session may have stopped at a commit of the page's own.
    pub(crate) fn release(&mut self) {
        self.going.take_if(|g| g.ours.is_none());
        if let Some(g) = &mut self.going {
            g.released.get_or_insert_with(Instant::now);
        }
    }

    /// A navigation's request failed (cancelled, refused, turned into a download): if
    /// ours fails before it commits, nothing of it is coming. Returns whether ours was
    /// *overtaken*: it failed after the page started a navigation of its own, which
    /// cancelled it (Chromium lets a page's navigation replace ours before ours is ready
    /// to commit) and whose request is refused, so that nothing would commit at all: the
    /// session sends ours again.
    pub(crate) fn failed(&mut self, loader: &str) -> bool {
        self.going
            .take_if(|g| g.ours.as_deref() == Some(loader))
            .is_some_and(|g| g.crossed)
    }

    /// A navigation's request finished loading. Its document may commit after that (the
    /// network reports a small body done before the renderer reports the commit), so ours
    /// is still awaited, but only for [`AFTER_COMMIT`] more: a response with nothing to
    /// show (a 204) never commits.
    pub(crate) fn finished(&mut self, loader: &str) {
        if let Some(g) = &mut self.going
            && g.ours.as_deref() == Some(loader)
        {
            g.finished.get_or_insert_with(Instant::now);
        }
    }

    /// Whether a navigation of ours has started and not yet committed or failed.
    pub(crate) fn awaiting_ours(&mut self) -> bool {
        self.going.take_if(|g| g.expired());
        self.going.as_ref().is_some_and(|g| g.ours.is_some())
    }

    /// Whether `loader` is the navigation of ours still awaited (see
    /// [`Landing::awaiting_ours`]).
    pub(crate) fn awaits(&mut self, loader: &str) -> bool {
        self.awaiting_ours()
            && self
                .going
                .as_ref()
                .is_some_and(|g| g.ours.as_deref() == Some(loader))
    }

    /// The main frame started a navigation to another document.
    pub(crate) fn started(&mut self, loader: &str, url: &str) {
        self.going.take_if(|g| g.expired());
        let watched = if let Some(going) = &mut self.going {
            match &going.ours {
                // Ours starts as the browser takes it in, so the first start for its URL
                // is ours; a page's navigation that started before it is cancelled by it
                // (or commits first and is replaced by it).
                None if document_url(url) == going.url => {
                    going.ours = Some(loader.to_string());
                    return;
                }
                Some(ours) if ours != loader => {
                    going.crossed = true;
                    Watched::Foreign
                }
                _ => return,
            }
        } else if let Some(landed) = self
            .landed
            .as_ref()
            .filter(|l| l.at.elapsed() < AFTER_COMMIT)
        {
            Watched::Suspect {
                left: landed.left.clone(),
                landed: landed.url.clone(),
            }
        } else {
            return;
        };
        self.watched.retain(|(_, _, at)| at.elapsed() < KEPT);
        self.watched
            .push((loader.to_string(), watched, Instant::now()));
    }

    /// The main frame committed a document.
    pub(crate) fn committed(&mut self, loader: &str, url: &str) {
        // One that commits was not refused (it needed no request, or was ready before
        // ours and committed first, which ours then replaced).
        self.watched.retain(|(l, _, _)| l != loader);
        if let Some(going) = self.going.as_mut()
            && going.ours.as_deref() != Some(loader)
        {
            // The page moved on before ours landed: ours now leaves that document.
            url.clone_into(&mut going.left);
        }
        match self.going.take_if(|g| g.ours.as_deref() == Some(loader)) {
            Some(going) => {
                self.landed = Some(Landed {
                    url: url.to_string(),
                    left: going.left,
                    at: Instant::now(),
                });
            }
            // Any later document is not ours to guard.
            None => self.landed = None,
        }
    }

    /// Whether the request of navigation `loader`, sent with `referer`, is to be refused;
    /// a navigation is judged once.
    pub(crate) fn refuse(&mut self, loader: &str, referer: Option<&str>) -> bool {
        let Some(i) = self.watched.iter().position(|(l, _, _)| l == loader) else {
            return false;
        };
        match self.watched.swap_remove(i).1 {
            Watched::Foreign => true,
            Watched::Suspect { left, landed } => {
                referer.is_some_and(|r| sent_from(r, &left, &landed))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEFT: &str = "http://localhost:9/moving.html";
    const OURS: &str = "http://127.0.0.1:9/second.html";

    fn landing() -> Landing {
        let mut l = Landing::default();
        l.begin(OURS, LEFT);
        l
    }

    #[test]
    fn a_navigation_started_between_ours_and_its_commit_is_refused_once() {
        let mut l = landing();
        l.started("A", OURS);
        l.started("B", "http://localhost:9/elsewhere.html");
        l.committed("A", OURS);
        l.release();
        assert!(!l.refuse("A", None), "ours goes through");
        assert!(l.refuse("B", None));
        assert!(!l.refuse("B", None), "once");
    }

    #[test]
    fn ours_is_guarded_until_it_commits_though_the_session_stopped_at_the_pages_commit() {
        let mut l = landing();
        l.started("A", OURS);
        // The page's own navigation, ready before ours, commits first; the session stops
        // waiting there. The new document moves on again before ours commits.
        l.committed("H1", "http://127.0.0.1:9/hopping");
        l.release();
        assert!(l.awaiting_ours());
        l.started("H2", "http://localhost:9/hopping");
        l.committed("A", OURS);
        assert!(!l.awaiting_ours());
        assert!(l.refuse("H2", None));
    }

    #[test]
    fn ours_cancelled_by_the_pages_navigation_is_overtaken() {
        let mut l = landing();
        l.started("A", OURS);
        l.started("B", "http://localhost:9/elsewhere.html");
        // B's request may be refused before ours is reported ended, or after.
        assert!(l.refuse("B", None));
        assert!(
            l.failed("A"),
            "overtaken: B was refused, so ours must go again"
        );
        assert!(!l.awaiting_ours());
        // A download (or a 204) ends ours with nothing of the page's on its way.
        let mut l = landing();
        l.started("A", OURS);
        assert!(!l.failed("A"));
        assert!(!l.failed("X"), "not ours");
    }

    #[test]
    fn ours_finished_loading_before_its_commit_is_still_awaited() {
        // A small body is reported loaded before the renderer reports the commit.
        let mut l = landing();
        l.started("A", OURS);
        l.finished("A");
        assert!(l.awaiting_ours());
        assert!(l.awaits("A") && !l.awaits("B"));
        l.started("B", "http://localhost:9/elsewhere.html");
        l.committed("A", OURS);
        assert!(!l.awaiting_ours());
        assert!(
            l.refuse("B", None),
            "started before our commit: the old page's"
        );
        assert!(!l.failed("A"), "landed, not overtaken");
    }

    #[test]
    fn a_navigation_of_ours_that_fails_or_never_starts_is_not_waited_for() {
        let mut l = landing();
        l.release();
        assert!(!l.awaiting_ours(), "never seen to start");
        l.started("X", "http://localhost:9/elsewhere.html");
        assert!(!l.refuse("X", None));
        let mut l = landing();
        l.started("A", OURS);
        assert!(!l.failed("A"));
        assert!(!l.awaiting_ours());
        l.started("X", "http://localhost:9/elsewhere.html");
        assert!(!l.refuse("X", None));
    }

    #[test]
    fn just_after_our_commit_the_old_documents_referer_gives_it_away() {
        let mut l = landing();
        l.started("A", OURS);
        l.committed("A", OURS);
        l.release();
        // The old document's, sent as it was unloading.
        l.started("B", "http://127.0.0.1:9/elsewhere.html");
        // The new document's own redirect, and one that sends no Referer.
        l.started("C", "http://127.0.0.1:9/account.html");
        l.started("D", "http://localhost:9/other.html");
        assert!(l.refuse("B", Some("http://localhost:9/")));
        assert!(!l.refuse("C", Some(OURS)));
        assert!(!l.refuse("D", None));
    }

    #[test]
    fn within_one_origin_the_whole_referer_gives_the_old_document_away() {
        let mut l = Landing::default();
        l.begin(OURS, "http://127.0.0.1:9/moving.html");
        l.started("A", OURS);
        // The page moved on once more before ours committed: ours leaves that one.
        l.committed("H", "http://127.0.0.1:9/moved.html");
        l.committed("A", OURS);
        for (id, referer, refused) in [
            ("B", "http://127.0.0.1:9/moved.html", true),
            ("C", OURS, false),
            ("D", "http://127.0.0.1:9/moving.html", false),
            // Origin only (a `origin` referrer policy): either document could have sent it.
            ("E", "http://127.0.0.1:9/", false),
        ] {
            l.started(id, "http://127.0.0.1:9/elsewhere.html");
            assert_eq!(l.refuse(id, Some(referer)), refused, "{id}");
        }
    }

    #[test]
    fn referers_are_read_as_their_policy_writes_them() {
        let (left, landed) = ("http://a.test/x?q=1", "http://b.test/y");
        assert!(sent_from("http://a.test/", left, landed));
        assert!(sent_from("http://a.test/x?q=1", left, landed));
        assert!(!sent_from("http://b.test/", left, landed));
        assert!(!sent_from("http://b.test/y", left, landed));
        assert!(!sent_from("not a url", left, landed));
        // The same document left and landed on (a goto to where the page already was).
        assert!(!sent_from(landed, landed, landed));
    }

    #[test]
    fn later_documents_are_not_guarded() {
        let mut l = landing();
        l.started("A", OURS);
        l.committed("A", OURS);
        l.release();
        // The agent moved on (a link) and the page there navigates back to the old origin.
        l.started("C", "http://127.0.0.1:9/third.html");
        l.committed("C", "http://127.0.0.1:9/third.html");
        l.started("D", "http://localhost:9/x.html");
        assert!(!l.refuse("D", Some("http://localhost:9/")));
    }

    #[test]
    fn nothing_is_refused_before_ours_is_seen_to_start() {
        // The page's navigation started first: ours cancels it (or it commits first and
        // ours replaces it). And if ours is never recognised, nothing is refused at all.
        let mut l = landing();
        l.started("B", "http://localhost:9/elsewhere.html");
        l.started("A", "http://127.0.0.1:9/second.html#part");
        l.committed("A", OURS);
        assert!(!l.refuse("B", None));
    }

    #[test]
    fn a_page_navigation_that_commits_before_ours_is_forgotten() {
        let mut l = landing();
        l.started("A", OURS);
        l.started("B", "http://localhost:9/elsewhere.html");
        l.committed("B", "http://localhost:9/elsewhere.html");
        l.committed("A", OURS);
        assert!(!l.refuse("B", None));
    }

    #[test]
    fn urls_are_compared_as_chromium_reports_them() {
        assert_eq!(document_url("HTTP://Example.COM"), "http://example.com/");
        assert_eq!(
            document_url("http://a.test/x?q=1#frag"),
            "http://a.test/x?q=1"
        );
        let mut l = Landing::default();
        l.begin("http://Example.com#top", LEFT);
        l.started("A", "http://example.com/");
        l.started("B", "http://example.com/other");
        assert!(l.refuse("B", None));
    }
}
