// One settling probe for action N. Resolves with the page's state once the page looks
// settled from inside (DOM quiet for QUIET ms, no counted timeout pending, see timers.js,
// and no CSS transition or animation the action just started still running, in the
// document and in its same-origin frames, where an action may have landed), or after
// WAIT ms at most so the Rust side can look at the network and the
// session's other signals. "leaving": the action started a navigation away from this
// document (marked by prepare.js; the next document has not committed yet). A form the
// action submitted counts as pending until its navigation begins (at most SUBMIT_MS: a
// submission that navigates nowhere after all must not hold settling up).
new Promise((resolve) => {
  const ACTION = __ACTION__;
  const QUIET = __QUIET__;
  const WAIT = __WAIT__;
  const SUBMIT_MS = 1000;
  const t = window.__sgTimers;
  // Our own waits must not count as the page's timers.
  const later = t ? t.setTimeout : window.setTimeout;
  const start = performance.now();
  const OPTS = { subtree: true, childList: true, attributes: true, characterData: true };
  if (!window.__sgQuiet) {
    // Installed once per document; mutations before it are covered by the load check.
    const q = { last: start, seen: new WeakSet([document]) };
    q.observer = new MutationObserver(() => { q.last = performance.now(); });
    q.observer.observe(document, OPTS);
    window.__sgQuiet = q;
  }
  const q = window.__sgQuiet;
  // Same-origin frames (nested ones too; cross-origin ones throw and are left to the
  // session), each document watched from when it is first seen, which counts as a change.
  const frames = () => {
    const out = [];
    const visit = (w, depth) => {
      for (let i = 0; i < w.frames.length && depth < 4; i++) {
        try {
          const f = w.frames[i], d = f.document;
          if (!d) continue;
          out.push(f);
          if (!q.seen.has(d)) {
            q.seen.add(d);
            q.observer.observe(d, OPTS);
            q.last = performance.now();
          }
          visit(f, depth + 1);
        } catch (e) { /* cross-origin */ }
      }
    };
    if (window.frames.length) visit(window, 0);
    return out;
  };
  // CSS transitions and animations change what a screenshot shows without touching the
  // DOM. Count the finite ones started in the last second that end within a second (an
  // accordion opening, a fade); spinners (infinite) and long-running ones do not count,
  // but endless ones are reported, with endless animation-frame loops (see timers.js):
  // without a frame-rate limit each makes Chromium render flat out.
  let endless = 0;
  const animating = (doc) => {
    if (typeof doc.getAnimations !== 'function') return 0;
    // Each document's animations run on its own timeline (a frame's starts at its load).
    const now = doc.timeline && doc.timeline.currentTime !== null ? doc.timeline.currentTime : performance.now();
    let n = 0;
    for (const a of doc.getAnimations()) {
      if (a.playState !== 'running') continue;
      const c = a.effect && a.effect.getComputedTiming ? a.effect.getComputedTiming() : null;
      if (c && !Number.isFinite(c.endTime)) {
        endless++;
        continue;
      }
      if (!c || c.localTime === null || a.startTime === null || now - a.startTime > 1000) continue;
      const left = c.endTime - c.localTime;
      if (left > 0 && left <= 1000) n++;
    }
    return n;
  };
  const check = () => {
    if (window.__sgLeaving === ACTION) return resolve({ state: 'leaving' });
    const now = performance.now();
    endless = t && t.looping() ? 1 : 0;
    const sub = window.__sgSubmitting;
    const submitting = sub && sub.n === ACTION && now - sub.at < SUBMIT_MS ? 1 : 0;
    let timers = (t ? t.pending() : 0) + animating(document) + submitting;
    for (const f of frames()) {
      const ft = f.__sgTimers;
      if (ft && ft.looping()) endless++;
      timers += (ft ? ft.pending() : 0) + animating(f.document);
    }
    const quiet = now - q.last;
    const state = document.readyState;
    if (state !== 'complete' || (quiet >= QUIET && timers === 0) || now - start >= WAIT) {
      return resolve({ state, quiet_ms: quiet, timers, endless });
    }
    // Quiet but for a pending timeout: look again soon after it is likely to have run.
    const next = quiet >= QUIET ? 5 : QUIET - quiet;
    later.call(window, check, Math.max(1, Math.min(next, WAIT - (now - start))));
  };
  check();
})
