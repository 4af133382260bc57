// One settling probe for action N. Resolves with the page's state once the page looks
// settled from inside (DOM quiet for QUIET ms and no counted timeout pending, see
// timers.js), or after WAIT ms at most so the Rust side can look at the network and the
// session's other signals. "leaving": the action started a navigation away from this
// document (marked by prepare.js; the next document has not committed yet).
new Promise((resolve) => {
  const ACTION = __ACTION__;
  const QUIET = __QUIET__;
  const WAIT = __WAIT__;
  const t = window.__sgTimers;
  // Our own waits must not count as the page's timers.
  const later = t ? t.setTimeout : window.setTimeout;
  const start = performance.now();
  if (!window.__sgQuiet) {
    // Installed once per document; mutations before it are covered by the load check.
    const q = { last: start };
    new MutationObserver(() => { q.last = performance.now(); })
      .observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
    window.__sgQuiet = q;
  }
  const check = () => {
    if (window.__sgLeaving === ACTION) return resolve({ state: 'leaving' });
    const now = performance.now();
    const quiet = now - window.__sgQuiet.last;
    const timers = t ? t.pending() : 0;
    const state = document.readyState;
    if (state !== 'complete' || (quiet >= QUIET && timers === 0) || now - start >= WAIT) {
      return resolve({ state, quiet_ms: quiet, timers });
    }
    // Quiet but for a pending timeout: look again soon after it is likely to have run.
    const next = quiet >= QUIET ? 5 : QUIET - quiet;
    later.call(window, check, Math.max(1, Math.min(next, WAIT - (now - start))));
  };
  check();
})
