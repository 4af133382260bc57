// Shared by the snippets that find where an element shows (spliced in by js.rs).
  const HTML_NS = 'http://www.w3.org/1999/xhtml';
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
