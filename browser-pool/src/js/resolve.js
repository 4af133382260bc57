// Finds an action's target element, scrolls it into view if needed, and returns the point to
// click (top-viewport coordinates) plus what kind of element it is. Returns {error} when the
// target is not usable. Element N is the Nth of the last observation, which may sit in a
// same-origin iframe or a shadow root.
(() => {
  const ID = __ID__, CSS = __CSS__;
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

  const el = CSS !== null ? document.querySelector(CSS) : numbered(ID);
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
