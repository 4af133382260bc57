// Resolves once the document has loaded and its DOM has been quiet for QUIET ms, or after
// MAX ms. Resolves to "leaving" straight away when the current action started a navigation
// away from this document (set by prepare.js), so the caller waits for the next document.
new Promise((resolve) => {
  const ACTION = __ACTION__, QUIET = __QUIET__, MAX = __MAX__;
  // Once loaded, a page that never goes quiet (animations) is not waited for longer than this.
  const QUIET_MAX = 1500;
  let loadedAt = null;
  if (window.__sgLeaving === ACTION) { setTimeout(() => resolve('leaving'), 25); return; }
  const t0 = performance.now();
  let last = t0;
  const obs = new MutationObserver(() => { last = performance.now(); });
  obs.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  const tick = () => {
    const now = performance.now();
    if (window.__sgLeaving === ACTION) { obs.disconnect(); resolve('leaving'); return; }
    const loaded = document.readyState === 'complete';
    if (loaded && loadedAt === null) loadedAt = now;
    const quiet = loaded && now - last >= QUIET;
    const restless = loaded && now - loadedAt >= QUIET_MAX;
    if (quiet || restless || now - t0 >= MAX) { obs.disconnect(); resolve(quiet ? 'settled' : 'busy'); return; }
    setTimeout(tick, 15);
  };
  tick();
})
