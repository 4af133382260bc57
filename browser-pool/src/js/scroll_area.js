// Finds the scrollable area at an action's target (the element itself or its nearest
// scrollable ancestor, through shadow roots and out of same-origin iframes, whose own
// document counts as an area; for a point, the element under it, inside iframes and shadow
// roots too), brings the target into view, and returns the point to turn the wheel at
// (top-viewport coordinates), how far to scroll, and where the area stands. The area is
// remembered in window.__sgScrollArea so the caller can see whether it moved.
(() => {
  const ID = __ID__, CSS = __CSS__, X = __X__, Y = __Y__, DOWN = __DOWN__;
  const HTML_NS = 'http://www.w3.org/1999/xhtml';
  // Element N of the last observation (observe.js keeps them in the top window under
  // Symbol.for('surfgym.elements'); it may sit in a same-origin iframe or a shadow root),
  // while it and every iframe around it are still in their documents.
  const numbered = (n) => {
    const el = (window[Symbol.for('surfgym.elements')] || [])[n - 1];
    if (!el) return null;
    for (let node = el; ;) {
      if (!node.isConnected) return null;
      const win = node.ownerDocument.defaultView;
      if (!win) return null;
      if (win === window) return el;
      let fe = null;
      try {
        fe = win.frameElement;
      } catch (e) {
        return null;
      }
      if (!fe) return null;
      node = fe;
    }
  };
  const meet = (a, b) => ({
    l: Math.max(a.l, b.l), t: Math.max(a.t, b.t), r: Math.min(a.r, b.r), b: Math.min(a.b, b.b),
  });
  const shift = (a, x, y) => ({ l: a.l + x, t: a.t + y, r: a.r + x, b: a.b + y });
  // The parent in the rendered tree: a slotted element's slot, a shadow root's host.
  const up = (n) => n.assignedSlot || n.parentElement || (n.parentNode && n.parentNode.host) || null;
  // The element's box and the part of the top viewport it can show through (clipping
  // containers, iframes), both in top-viewport coordinates; the same rules as observe.js.
  const place = (el) => {
    const r0 = el.getBoundingClientRect();
    let box = { l: r0.left, t: r0.top, r: r0.right, b: r0.bottom };
    let clip = { l: -Infinity, t: -Infinity, r: Infinity, b: Infinity };
    for (let node = el; ;) {
      const doc = node.ownerDocument, win = doc.defaultView, root = doc.documentElement;
      const bodyClips = win.getComputedStyle(root).overflow !== 'visible';
      let mode = win.getComputedStyle(node).position;
      for (let a = up(node); a && a !== root && mode !== 'fixed'; a = up(a)) {
        const cs = win.getComputedStyle(a);
        const pos = cs.position;
        if (mode === 'absolute' && pos === 'static') continue;
        mode = pos;
        if (cs.display === 'inline' || cs.display === 'contents' || (a === doc.body && !bodyClips) ||
            a.namespaceURI !== HTML_NS || cs.overflow === 'visible') continue;
        const ar = a.getBoundingClientRect();
        const x = ar.left + a.clientLeft, y = ar.top + a.clientTop;
        const cx = cs.overflowX !== 'visible', cy = cs.overflowY !== 'visible';
        clip = meet(clip, {
          l: cx ? x : -Infinity, t: cy ? y : -Infinity,
          r: cx ? x + a.clientWidth : Infinity, b: cy ? y + a.clientHeight : Infinity,
        });
      }
      clip = meet(clip, { l: 0, t: 0, r: win.innerWidth, b: win.innerHeight });
      if (win === window) return { box, clip };
      const fe = win.frameElement;
      const fcs = fe.ownerDocument.defaultView.getComputedStyle(fe);
      const fr = fe.getBoundingClientRect();
      const x = fr.left + fe.clientLeft + (parseFloat(fcs.paddingLeft) || 0);
      const y = fr.top + fe.clientTop + (parseFloat(fcs.paddingTop) || 0);
      box = shift(box, x, y);
      clip = shift(clip, x, y);
      node = fe;
    }
  };

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
    el = CSS !== null ? document.querySelector(CSS) : numbered(ID);
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
