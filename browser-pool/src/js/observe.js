// Numbers the page's interactive elements and describes them. Runs as one expression;
// returns a plain object (Runtime.evaluate returnByValue).
//
// It walks the rendered tree once: the top document, the documents of same-origin iframes
// (nested ones too) and open shadow roots, each where its iframe or host sits (slotted
// children where their slot is), so the numbering is one depth-first order. A cross-origin
// iframe's document is out of this script's reach: it is reported as a hole (where in the
// order it falls, where its content box sits, what of it shows) and its element kept under
// Symbol.for('surfgym.frames'); the session scans it with this same script run in the
// frame (ORIGIN then says where the frame sits and how many elements are left) and splices
// its elements in at the hole (session/frames.rs). Boxes are in top-viewport coordinates. An element is in the viewport
// only when part of it shows through every iframe and clipping container around it (a list
// scrolled inside an `overflow: auto` box hides its other items); containers clip what is
// positioned inside them the way CSS does (fixed elements escape all of them, absolute ones
// those inside their containing block). The numbered elements are kept, in order, in the
// top window under Symbol.for('surfgym.elements') (a key no page script stumbles on), where
// resolve.js, fill.js, select.js and scroll_area.js find element N (iframe and shadow-root
// elements too, by reference); the page's DOM is not touched.
//
// Cost: one getComputedStyle per rendered element (the walk needs display, cursor and
// overflow anyway), a layout box only for candidates, clipping containers and iframes.
(() => {
  const SHORT_TEXT = 4000;
  const CAPTCHA = [
    'iframe[src*="recaptcha"]', 'iframe[src*="hcaptcha.com"]', 'iframe[src*="challenges.cloudflare.com"]',
    '.g-recaptcha', '.h-captcha', '.cf-turnstile', '#cf-challenge-running', '[data-sitekey]',
  ].join(',');
  const SELECTOR = [
    'a[href]', 'button', 'input', 'select', 'textarea', 'summary', '[contenteditable=""]',
    '[contenteditable="true"]', '[onclick]', '[tabindex]:not([tabindex="-1"])',
    '[role=button]', '[role=link]', '[role=checkbox]', '[role=radio]', '[role=tab]',
    '[role=menuitem]', '[role=option]', '[role=switch]', '[role=combobox]', '[role=textbox]',
    '[role=slider]', '[role=searchbox]', '[role=treeitem]',
  ].join(',');
  // Besides the semantic ones, elements that only look or behave interactive: the outermost
  // element of a `cursor: pointer` region (script-driven links, tabs, menus) and draggable
  // ones (HTML5 draggable, jQuery UI draggables and sortable items), unless inside one of
  // the semantic ones already.
  const DRAGGABLE = '[draggable="true"], .ui-draggable, .ui-sortable-handle';
  const ORIGIN = __ORIGIN__;
  const MAX = ORIGIN ? ORIGIN.max : 400;
  const HTML_NS = 'http://www.w3.org/1999/xhtml';
  // Never rendered: not worth a style lookup.
  const SKIP = new Set(['head', 'script', 'style', 'noscript', 'template', 'link', 'meta', 'title', 'base']);
  const clean = (s, n) => {
    s = (s || '').replace(/\s+/g, ' ').trim();
    return s.length > n ? s.slice(0, n - 1) + '…' : s;
  };
  const implicitRole = (el, tag) => {
    if (tag === 'a') return 'link';
    if (tag === 'button' || tag === 'summary') return 'button';
    if (tag === 'select') return el.multiple ? 'listbox' : 'combobox';
    if (tag === 'textarea') return 'textbox';
    if (tag === 'input') {
      const t = (el.type || 'text').toLowerCase();
      if (t === 'checkbox' || t === 'radio') return t;
      if (t === 'range') return 'slider';
      if (t === 'number') return 'spinbutton';
      if (t === 'search') return 'searchbox';
      if (['submit', 'button', 'reset', 'image'].includes(t)) return 'button';
      return 'textbox';
    }
    if (el.isContentEditable) return 'textbox';
    return 'generic';
  };
  const labelOf = (el, tag) => {
    const aria = el.getAttribute('aria-label');
    if (aria && aria.trim()) return aria;
    const by = el.getAttribute('aria-labelledby');
    if (by) {
      // Ids are looked up in the element's own tree (its document or shadow root).
      const root = el.getRootNode();
      const byId = (id) => (root.getElementById ? root.getElementById(id) : null) || {};
      const t = by.split(/\s+/).map((id) => byId(id).innerText || '').join(' ');
      if (t.trim()) return t;
    }
    // `labels` follows <label for> within the element's own tree too.
    if (el.labels && el.labels.length) {
      const t = Array.from(el.labels).map((l) => l.innerText).join(' ');
      if (t.trim()) return t;
    }
    if (tag === 'input' && ['submit', 'button', 'reset'].includes((el.type || '').toLowerCase())) {
      return el.value;
    }
    if (tag !== 'select' && tag !== 'textarea' && tag !== 'input') {
      const t = el.innerText;
      if (t && t.trim()) return t;
    }
    const img = el.querySelector && el.querySelector('img[alt]');
    return el.getAttribute('placeholder') || el.getAttribute('title') || el.getAttribute('alt') ||
      (img ? img.alt : '') || el.getAttribute('name') || '';
  };
  const describe = (el, r, box, shown) => {
    const tag = el.tagName.toLowerCase();
    const item = {
      id: elements.length + 1, tag, role: el.getAttribute('role') || implicitRole(el, tag),
      label: clean(labelOf(el, tag), 100),
      disabled: !!el.disabled || el.getAttribute('aria-disabled') === 'true',
      bbox: { x: box.l, y: box.t, width: r.width, height: r.height },
      in_viewport: shown,
    };
    if (tag === 'input' || tag === 'textarea') {
      const t = (el.type || 'text').toLowerCase();
      item.input_type = tag === 'input' ? t : 'textarea';
      if (t === 'checkbox' || t === 'radio') item.checked = !!el.checked;
      else if (t === 'password') item.value = el.value ? '••••' : '';
      else if (!['submit', 'button', 'reset', 'image'].includes(t)) item.value = clean(el.value, tag === 'textarea' ? 2000 : 200);
      if (el.placeholder) item.placeholder = clean(el.placeholder, 80);
    } else if (tag === 'select') {
      const opt = el.options[el.selectedIndex];
      item.value = opt ? clean(opt.text, 100) : '';
      item.options = Array.from(el.options).slice(0, 25).map((o) => clean(o.text, 60));
    } else if (el.getAttribute('aria-checked') !== null) {
      item.checked = el.getAttribute('aria-checked') === 'true';
    }
    if (tag === 'a') item.href = el.href;
    return item;
  };
  // Rectangles {l, t, r, b} in top-viewport coordinates; an empty one has r <= l or b <= t.
  const meet = (a, b) => ({
    l: Math.max(a.l, b.l), t: Math.max(a.t, b.t), r: Math.min(a.r, b.r), b: Math.min(a.b, b.b),
  });
  const shows = (box, clip) => box.r > clip.l && box.b > clip.t && box.l < clip.r && box.t < clip.b;

  const found = [];
  const elements = [];
  const holes = [];
  const frames = [];
  // One document: its window, where its viewport sits in the top one (x, y) and what of
  // that viewport shows (view).
  const frameOf = (doc, x, y, view) => {
    const win = doc.defaultView, root = doc.documentElement, body = doc.body;
    // The root's overflow, and the body's when the root has none, belong to the viewport.
    const bodyClips = !!body && win.getComputedStyle(root).overflow !== 'visible';
    return { win, root, body, bodyClips, x, y, view };
  };
  const enterFrame = (fe, cs, f, own) => {
    if (cs.visibility === 'hidden') return;
    const pl = parseFloat(cs.paddingLeft) || 0, pt = parseFloat(cs.paddingTop) || 0;
    const w = fe.clientWidth - pl - (parseFloat(cs.paddingRight) || 0);
    const h = fe.clientHeight - pt - (parseFloat(cs.paddingBottom) || 0);
    if (w < 1 || h < 1) return;
    const r = fe.getBoundingClientRect();
    const x = f.x + r.left + fe.clientLeft + pl, y = f.y + r.top + fe.clientTop + pt;
    const view = meet(own, { l: x, t: y, r: x + w, b: y + h });
    let doc = null;
    try {
      doc = fe.contentDocument;
    } catch (e) {
      doc = null;
    }
    if (!doc) {
      // Cross-origin (contentDocument is null): the session scans it in the frame.
      holes.push({ at: elements.length, slot: frames.length, x, y, view });
      frames.push(fe);
      return;
    }
    if (!doc.documentElement || !doc.defaultView) return;
    walk(doc.documentElement, frameOf(doc, x, y, view), view, view, false, false, false);
  };
  // clip: what shows of the viewport for in-flow descendants; abs: the same for absolutely
  // positioned ones (the clip at their containing block); inSem: inside a semantic element;
  // ptr: the parent's cursor is a pointer; inBody: below the body.
  const walk = (el, f, clip, abs, inSem, ptr, inBody) => {
    if (elements.length >= MAX) return;
    const name = el.localName;
    if (SKIP.has(name)) return;
    const cs = f.win.getComputedStyle(el);
    const display = cs.display;
    if (display === 'none') return;
    let pos = null, own = clip;
    if (clip !== abs || clip !== f.view) {
      pos = cs.position;
      own = pos === 'fixed' ? f.view : pos === 'absolute' ? abs : clip;
    }
    const sem = el.matches(SELECTOR);
    let isPtr = false, cand = sem;
    if (!sem && !inSem) {
      isPtr = cs.cursor === 'pointer';
      if (inBody) cand = (isPtr && !ptr) || el.matches(DRAGGABLE);
    }
    let r = null;
    if (cand && !(name === 'input' && (el.type || '').toLowerCase() === 'hidden')) {
      r = el.getBoundingClientRect();
      if (r.width >= 1 && r.height >= 1 && cs.visibility !== 'hidden') {
        const box = { l: r.left + f.x, t: r.top + f.y, r: r.right + f.x, b: r.bottom + f.y };
        elements.push(describe(el, r, box, shows(box, own)));
        found.push(el);
      }
    }
    if (name === 'iframe' || name === 'frame') {
      enterFrame(el, cs, f, own);
      return;
    }
    let kids = el.children;
    if (el.shadowRoot) kids = el.shadowRoot.children;
    else if (name === 'slot') {
      const slotted = el.assignedElements();
      if (slotted.length) kids = slotted;
    }
    if (!kids.length) return;
    let inner = own;
    if (display !== 'inline' && display !== 'contents' && el !== f.root && (el !== f.body || f.bodyClips) &&
        el.namespaceURI === HTML_NS && cs.overflow !== 'visible') {
      if (!r) r = el.getBoundingClientRect();
      const x = f.x + r.left + el.clientLeft, y = f.y + r.top + el.clientTop;
      const cx = cs.overflowX !== 'visible', cy = cs.overflowY !== 'visible';
      inner = meet(own, {
        l: cx ? x : -Infinity, t: cy ? y : -Infinity,
        r: cx ? x + el.clientWidth : Infinity, b: cy ? y + el.clientHeight : Infinity,
      });
    }
    let innerAbs = abs;
    if (inner !== abs) {
      if (pos === null) pos = cs.position;
      if (pos !== 'static') innerAbs = inner;
    }
    const kidSem = inSem || sem, kidBody = inBody || el === f.body;
    for (let i = 0; i < kids.length; i++) walk(kids[i], f, inner, innerAbs, kidSem, isPtr, kidBody);
  };

  const vw = window.innerWidth, vh = window.innerHeight;
  // In a cross-origin frame: where its viewport sits in the top one and what of it shows.
  const view = ORIGIN ? ORIGIN.view : { l: 0, t: 0, r: vw, b: vh };
  const x0 = ORIGIN ? ORIGIN.x : 0, y0 = ORIGIN ? ORIGIN.y : 0;
  if (document.documentElement) walk(document.documentElement, frameOf(document, x0, y0, view), view, view, false, false, false);
  window[Symbol.for('surfgym.elements')] = found;
  window[Symbol.for('surfgym.frames')] = frames;
  const doc = document.documentElement;
  // What tells a site turning the agent away (the engine's block rules read it), for the
  // top document only: its response's status, CAPTCHA widgets, password fields, and the
  // text of a short page (an interstitial is short; a long page's innerText costs a layout).
  const signals = ORIGIN ? null : (() => {
    const nav = performance.getEntriesByType('navigation')[0];
    const body = document.body;
    // Counted only as far as the limit: a long page's text is never gathered.
    let text = 0;
    if (body) {
      const walker = document.createTreeWalker(body, NodeFilter.SHOW_TEXT);
      while (text <= SHORT_TEXT && walker.nextNode()) text += walker.currentNode.length;
    }
    const short = body && text <= SHORT_TEXT;
    return {
      status: nav && nav.responseStatus ? nav.responseStatus : null,
      captcha: !!document.querySelector(CAPTCHA),
      password_fields: document.querySelectorAll('input[type=password]').length,
      short_text: short ? body.innerText.slice(0, SHORT_TEXT) : null,
    };
  })();
  return {
    signals,
    url: location.href,
    title: document.title,
    scroll: { x: window.scrollX, y: window.scrollY, page_height: doc ? doc.scrollHeight : 0, viewport_height: vh },
    elements,
    holes,
  };
})()
