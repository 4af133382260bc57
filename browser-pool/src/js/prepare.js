// Marks the current document before action N, so that settle.js can tell a navigation away
// (beforeunload fires when it starts, long before the next document commits).
(() => {
  const n = __ACTION__;
  window.addEventListener('beforeunload', () => { window.__sgLeaving = n; }, { once: true });
  return true;
})()
