// Finds the scrollable area at an action's target (the element itself or its nearest
// scrollable ancestor, through shadow roots and out of same-origin iframes, whose own
// document counts as an area; for a point, the element under it, inside iframes and shadow
// roots too), brings the target into view, and returns the point to turn the wheel at
// (top-viewport coordinates), how far to scroll, and where the area stands. The area is
// remembered in window.__sgScrollArea so the caller can see whether it moved.
(() => {
  const ID = __ID__, CSS = __CSS__, X = __X__, Y = __Y__, DOWN = __DOWN__;
  // #include numbered.js
  // #include place.js

  const padded = (fe) => {
    const cs = fe.ownerDocument.defaultView.getComputedStyle(fe);
    return [fe.clientLeft + (parseFloat(cs.paddingLeft) || 0), fe.clientTop + (parseFloat(cs.paddingTop) || 0)];
  };
  // The innermost element at a top-viewport point.
  const deepAt = (x, y) => {
    let el = document.elementFromPoint(x, y);
    for (let hops = 0; el && hops < 64; hops++) {
      if (el.shadowRoot) {
        const inner = el.shadowRoot.elementFromPoint(x, y);
        if (inner && inner !== el) { el = inner; continue; }
      }
      if (el.localName === 'iframe' || el.localName === 'frame') {
        let doc = null;
        try {
          doc = el.contentDocument;
        } catch (e) {
          doc = null;
        }
        if (doc) {
          const r = el.getBoundingClientRect(), [px, py] = padded(el);
          const ix = x - r.left - px, iy = y - r.top - py;
          const inner = doc.elementFromPoint(ix, iy);
          if (inner) { el = inner; x = ix; y = iy; continue; }
        }
      }
      break;
    }
    return el;
  };
  let el;
  if (X !== null) {
    el = deepAt(X, Y);
    if (!el) return { error: 'there is no element at (' + X + ', ' + Y + ')' };
  } else {
    el = CSS !== null ? selected(CSS) : numbered(ID);
    if (!el) {
      return { error: CSS !== null ? 'no element matches css=' + JSON.stringify(CSS)
        : 'element ' + ID + ' is not on the page any more (the page changed; use the numbers of the latest observation)' };
    }
  }
  const scrollable = (e) => {
    const doc = e.ownerDocument;
    if (e === doc.scrollingElement || e === doc.body || e === doc.documentElement) return false;
    const oy = doc.defaultView.getComputedStyle(e).overflowY;
    return (oy === 'auto' || oy === 'scroll' || oy === 'overlay') && e.scrollHeight > e.clientHeight + 1;
  };
  // An iframe's document scrolls as a whole unless it or the iframe says it does not.
  const frameScrolls = (doc) => {
    const page = doc.scrollingElement, win = doc.defaultView;
    if (!page || page.scrollHeight <= page.clientHeight + 1) return false;
    if (win.frameElement.getAttribute('scrolling') === 'no') return false;
    const hidden = (e) => !!e && win.getComputedStyle(e).overflowY === 'hidden';
    return !hidden(doc.documentElement) && !hidden(doc.body);
  };
  let area = null, frame = null;
  for (let n = el; n;) {
    if (n.nodeType === 1 && scrollable(n)) { area = n; break; }
    const parent = up(n);
    if (parent) { n = parent; continue; }
    const doc = n.ownerDocument, win = doc.defaultView;
    if (!win || win === window) break;
    if (frameScrolls(doc)) { area = doc.scrollingElement; frame = win.frameElement; break; }
    n = win.frameElement;
  }
  if (!area) {
    return { error: 'the target is not inside a scrollable area (use scroll(down) or scroll(up) for the page)' };
  }
  const max = area.scrollHeight - area.clientHeight;
  if (DOWN && area.scrollTop >= max - 1) return { error: 'the scrollable area is already at its bottom' };
  if (!DOWN && area.scrollTop <= 0) return { error: 'the scrollable area is already at its top' };
  // Bring the area (an iframe's document: the iframe) wholly into view when it is not.
  const holder = frame || area;
  const h = place(holder);
  const inside = (a, c) => a.l >= c.l && a.t >= c.t && a.r <= c.r && a.b <= c.b;
  if (!inside(h.box, h.clip)) holder.scrollIntoView({ block: 'nearest', inline: 'nearest', behavior: 'instant' });
  // The visible part of the area (for an iframe's document, of the iframe's viewport).
  const p = place(frame ? area.ownerDocument.documentElement : area);
  const seen = frame ? p.clip : meet(p.box, p.clip);
  if (seen.r - seen.l < 1 || seen.b - seen.t < 1) return { error: 'the scrollable area is not visible' };
  // Turn the wheel over the target when it is visible inside the area, else over the area.
  let x = (seen.l + seen.r) / 2, y = (seen.t + seen.b) / 2;
  if (X !== null) {
    x = X; y = Y;
  } else if (el !== area) {
    const e = place(el), v = meet(seen, e.clip);
    const cx = (e.box.l + e.box.r) / 2, cy = (e.box.t + e.box.b) / 2;
    if (cx > v.l && cx < v.r && cy > v.t && cy < v.b) { x = cx; y = cy; }
  }
  window.__sgScrollArea = area;
  return { x, y, amount: Math.max(40, Math.round(area.clientHeight * 0.8)), top: area.scrollTop };
})()
