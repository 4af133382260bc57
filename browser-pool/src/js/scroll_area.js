// Finds the scrollable area at an action's target (the element itself or its nearest
// scrollable ancestor; for a point, the element under it), brings the target into view, and
// returns the point to turn the wheel at, how far to scroll, and where the area stands.
// The area is remembered in window.__sgScrollArea so the caller can see whether it moved.
(() => {
  const ID = __ID__, CSS = __CSS__, X = __X__, Y = __Y__, DOWN = __DOWN__;
  let el;
  if (X !== null) {
    el = document.elementFromPoint(X, Y);
    if (!el) return { error: 'there is no element at (' + X + ', ' + Y + ')' };
  } else {
    el = CSS !== null ? document.querySelector(CSS) : document.querySelector('[data-sg-id="' + ID + '"]');
    if (!el) {
      return { error: CSS !== null ? 'no element matches css=' + JSON.stringify(CSS)
        : 'element ' + ID + ' is not on the page any more (the page changed; use the numbers of the latest observation)' };
    }
  }
  const page = document.scrollingElement || document.documentElement;
  const scrollable = (e) => {
    if (e === page || e === document.body || e === document.documentElement) return false;
    const oy = getComputedStyle(e).overflowY;
    return (oy === 'auto' || oy === 'scroll' || oy === 'overlay') && e.scrollHeight > e.clientHeight + 1;
  };
  let area = el;
  while (area && area.nodeType === 1 && !scrollable(area)) area = area.parentElement;
  if (!area || area.nodeType !== 1) {
    return { error: 'the target is not inside a scrollable area (use scroll(down) or scroll(up) for the page)' };
  }
  const max = area.scrollHeight - area.clientHeight;
  if (DOWN && area.scrollTop >= max - 1) return { error: 'the scrollable area is already at its bottom' };
  if (!DOWN && area.scrollTop <= 0) return { error: 'the scrollable area is already at its top' };
  const vw = window.innerWidth, vh = window.innerHeight;
  let r = area.getBoundingClientRect();
  if (r.top < 0 || r.left < 0 || r.bottom > vh || r.right > vw) {
    area.scrollIntoView({ block: 'nearest', inline: 'nearest', behavior: 'instant' });
    r = area.getBoundingClientRect();
  }
  // The visible part of the area (inside the viewport).
  const left = Math.max(r.left, 0), top = Math.max(r.top, 0);
  const right = Math.min(r.right, vw), bottom = Math.min(r.bottom, vh);
  if (right - left < 1 || bottom - top < 1) return { error: 'the scrollable area is not visible' };
  // Turn the wheel over the target when it is visible inside the area, else over the area.
  let x = (left + right) / 2, y = (top + bottom) / 2;
  if (X !== null) {
    x = X; y = Y;
  } else if (el !== area) {
    const e = el.getBoundingClientRect();
    const cx = e.left + e.width / 2, cy = e.top + e.height / 2;
    if (cx > left && cx < right && cy > top && cy < bottom) { x = cx; y = cy; }
  }
  window.__sgScrollArea = area;
  return { x, y, amount: Math.max(40, Math.round(area.clientHeight * 0.8)), top: area.scrollTop };
})()
