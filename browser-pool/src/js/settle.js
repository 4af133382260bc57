// One settling probe for action N. Resolves with the page's state once the page looks
// settled from inside (DOM quiet for QUIET ms, no counted timeout pending, see timers.js,
// and no CSS transition or animation the action just started still running), or after
// WAIT ms at most so the Rust side can look at the network and the
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
  // CSS transitions and animations change what a screenshot shows without touching the
  // DOM. Count the finite ones started in the last second that end within a second (an
  // accordion opening, a fade); spinners (infinite) and long-running ones do not count.
  const animating = () => {
    if (typeof document.getAnimations !== 'function') return 0;
    const now = performance.now();
    let n = 0;
    for (const a of document.getAnimations()) {
      if (a.playState !== 'running' || a.startTime === null || now - a.startTime > 1000) continue;
      const c = a.effect && a.effect.getComputedTiming ? a.effect.getComputedTiming() : null;
      if (!c || !Number.isFinite(c.endTime) || c.localTime === null) continue;
      const left = c.endTime - c.localTime;
      if (left > 0 && left <= 1000) n++;
    }
    return n;
  };
  const check = () => {
    if (window.__sgLeaving === ACTION) return resolve({ state: 'leaving' });
    const now = performance.now();
    const quiet = now - window.__sgQuiet.last;
    const timers = (t ? t.pending() : 0) + animating();
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
