// Where the content box of cross-origin frame SLOT (as the last scan of this document
// listed it under Symbol.for('surfgym.frames')) sits, in this document's top-viewport
// coordinates (a cross-origin frame's own viewport when this runs in one). With BRING, a
// frame partly outside its window is first scrolled into view, so that what the session
// clicks inside it shows.
(() => {
  const SLOT = __SLOT__, BRING = __BRING__;
  // #include place.js
  const fe = (window[Symbol.for('surfgym.frames')] || [])[SLOT];
  if (!fe || !fe.isConnected) return { error: 'the frame is not on the page any more (use the numbers of the latest observation)' };
  const origin = () => {
    const cs = fe.ownerDocument.defaultView.getComputedStyle(fe);
    const p = place(fe);
    return {
      x: p.box.l + fe.clientLeft + (parseFloat(cs.paddingLeft) || 0),
      y: p.box.t + fe.clientTop + (parseFloat(cs.paddingTop) || 0),
    };
  };
  if (BRING) {
    const r = fe.getBoundingClientRect(), win = fe.ownerDocument.defaultView;
    if (r.left < 0 || r.top < 0 || r.right > win.innerWidth || r.bottom > win.innerHeight) {
      fe.scrollIntoView({ block: 'nearest', inline: 'nearest', behavior: 'instant' });
    }
  }
  return origin();
})()
