// Finds an action's target element, scrolls it into view if needed, and returns the point to
// click (top-viewport coordinates) plus what kind of element it is. Returns {error} when the
// target is not usable. Element N is the Nth of the last observation, which may sit in a
// same-origin iframe or a shadow root.
(() => {
  const ID = __ID__, CSS = __CSS__;
  // #include numbered.js
  // #include place.js

  const el = CSS !== null ? selected(CSS) : numbered(ID);
  if (!el) {
    return { error: CSS !== null ? 'no element matches css=' + JSON.stringify(CSS)
      : 'element ' + ID + ' is not on the page any more (the page changed; use the numbers of the latest observation)' };
  }
  const centre = (a) => [(a.l + a.r) / 2, (a.t + a.b) / 2];
  const within = (p, a) => p[0] >= a.l && p[0] < a.r && p[1] >= a.t && p[1] < a.b;
  const inViewport = (a) => a.l >= 0 && a.t >= 0 && a.r <= window.innerWidth && a.b <= window.innerHeight;
  let p = place(el);
  // Partly outside the window, or its centre hidden in a scrolled container or an iframe.
  if (!inViewport(p.box) || !within(centre(p.box), p.clip)) {
    el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    p = place(el);
  }
  if (p.box.r - p.box.l < 1 || p.box.b - p.box.t < 1) return { error: 'the element is not visible' };
  let point = centre(p.box);
  if (!within(point, p.clip)) {
    // Still clipped (larger than its container): aim at the part that shows, if any.
    const seen = meet(p.box, p.clip);
    if (seen.r - seen.l >= 1 && seen.b - seen.t >= 1) point = centre(seen);
  }
  const tag = el.tagName.toLowerCase();
  return {
    x: point[0], y: point[1], tag,
    input_type: tag === 'input' ? (el.type || 'text').toLowerCase() : null,
    disabled: !!el.disabled,
  };
})()
