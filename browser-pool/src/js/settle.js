// One settling probe for action N: how long the DOM has been quiet, whether the document
// has loaded, or "leaving" when the action started a navigation away from this document
// (marked by prepare.js; the next document has not committed yet). The Rust side polls
// this, so a page whose scripts hang is noticed within one call's time limit.
(() => {
  const ACTION = __ACTION__;
  if (window.__sgLeaving === ACTION) return { state: 'leaving' };
  const now = performance.now();
  if (!window.__sgQuiet) {
    // Installed once per document; mutations before it are covered by the load check.
    const q = { last: now };
    new MutationObserver(() => { q.last = performance.now(); })
      .observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
    window.__sgQuiet = q;
  }
  return { state: document.readyState, quiet_ms: now - window.__sgQuiet.last };
})()
