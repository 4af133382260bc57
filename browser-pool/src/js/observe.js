// Numbers the page's interactive elements and describes them. Runs as one expression;
// returns a plain object (Runtime.evaluate returnByValue).
(() => {
  const SELECTOR = [
    'a[href]', 'button', 'input', 'select', 'textarea', 'summary', '[contenteditable=""]',
    '[contenteditable="true"]', '[onclick]', '[tabindex]:not([tabindex="-1"])',
    '[role=button]', '[role=link]', '[role=checkbox]', '[role=radio]', '[role=tab]',
    '[role=menuitem]', '[role=option]', '[role=switch]', '[role=combobox]', '[role=textbox]',
    '[role=slider]', '[role=searchbox]', '[role=treeitem]',
  ].join(',');
  const MAX = 400;
  const clean = (s, n) => {
    s = (s || '').replace(/\s+/g, ' ').trim();
    return s.length > n ? s.slice(0, n - 1) + '…' : s;
  };
  const implicitRole = (el) => {
    const tag = el.tagName.toLowerCase();
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
  const labelOf = (el) => {
    const aria = el.getAttribute('aria-label');
    if (aria && aria.trim()) return aria;
    const by = el.getAttribute('aria-labelledby');
    if (by) {
      const t = by.split(/\s+/).map((id) => (document.getElementById(id) || {}).innerText || '').join(' ');
      if (t.trim()) return t;
    }
    if (el.labels && el.labels.length) {
      const t = Array.from(el.labels).map((l) => l.innerText).join(' ');
      if (t.trim()) return t;
    }
    const tag = el.tagName.toLowerCase();
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
  const visible = (el, r) => {
    if (r.width < 1 || r.height < 1) return false;
    const st = getComputedStyle(el);
    return st.visibility !== 'hidden' && st.display !== 'none';
  };
  for (const old of document.querySelectorAll('[data-sg-id]')) old.removeAttribute('data-sg-id');
  const vw = window.innerWidth, vh = window.innerHeight;
  // Besides the semantic ones, elements that only look or behave interactive: the outermost
  // element of a `cursor: pointer` region (script-driven links, tabs, menus) and draggable
  // ones (HTML5 draggable, jQuery UI draggables and sortable items), unless inside one of
  // the semantic ones already.
  const DRAGGABLE = '[draggable="true"], .ui-draggable, .ui-sortable-handle';
  const extra = (el) => {
    if (el.closest(SELECTOR)) return false;
    if (el.matches(DRAGGABLE)) return true;
    if (getComputedStyle(el).cursor !== 'pointer') return false;
    const parent = el.parentElement;
    return !parent || getComputedStyle(parent).cursor !== 'pointer';
  };
  const body = document.body;
  const candidates = [];
  for (const el of document.querySelectorAll('*')) {
    if (el.matches(SELECTOR) || (body && el !== body && body.contains(el) && extra(el))) candidates.push(el);
  }
  const elements = [];
  for (const el of candidates) {
    if (elements.length >= MAX) break;
    const tag = el.tagName.toLowerCase();
    if (tag === 'input' && (el.type || '').toLowerCase() === 'hidden') continue;
    const r = el.getBoundingClientRect();
    if (!visible(el, r)) continue;
    const id = elements.length + 1;
    el.setAttribute('data-sg-id', String(id));
    const item = {
      id, tag, role: el.getAttribute('role') || implicitRole(el), label: clean(labelOf(el), 100),
      disabled: !!el.disabled || el.getAttribute('aria-disabled') === 'true',
      bbox: { x: r.left, y: r.top, width: r.width, height: r.height },
      in_viewport: r.right > 0 && r.bottom > 0 && r.left < vw && r.top < vh,
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
    elements.push(item);
  }
  const doc = document.documentElement;
  return {
    url: location.href,
    title: document.title,
    scroll: { x: window.scrollX, y: window.scrollY, page_height: doc.scrollHeight, viewport_height: vh },
    elements,
  };
})()
