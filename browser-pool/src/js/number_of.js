// The last observation's number of the first element a CSS selector matches (what a
// reference solution's target is called in the element list a model was shown), or null
// when nothing matches or the element was not numbered.
(() => {
  const CSS = __CSS__;
  // #include numbered.js
  const el = selected(CSS);
  if (!el) return null;
  const i = (window[Symbol.for('surfgym.elements')] || []).indexOf(el);
  return i < 0 ? null : i + 1;
})()
