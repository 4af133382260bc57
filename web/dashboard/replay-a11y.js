// surfgym dashboard — the replay's accessibility view of a step: what the policy could
// address, as a screen reader would list it, each node with its element number.
//
// Steps store the numbered elements the policy was shown (role, accessible name, value,
// state, box), not Chromium's full accessibility tree (which workers read only with
// --ax-tree, into the prompt). The view is derived from those elements: the page (its
// title) at the root, then the elements in the viewport in reading order (top to bottom,
// left to right), then those off-screen. Hovering or focusing a node outlines its box on
// the screenshot. Everything from the page is inserted as text.
'use strict';

(function () {
  const SG = window.surfgym;
  const { h } = SG;

  function num(x) {
    const n = Number(x);
    return Number.isFinite(n) ? n : 0;
  }

  // Reading order: rows of boxes whose tops are within 8 CSS px, then left to right.
  function readingOrder(a, b) {
    const ay = num(a.bbox && a.bbox.y);
    const by = num(b.bbox && b.bbox.y);
    if (Math.abs(ay - by) > 8) return ay - by;
    return num(a.bbox && a.bbox.x) - num(b.bbox && b.bbox.x);
  }

  function states(el) {
    const out = [];
    if (el.value != null && el.value !== '') out.push(`value ${JSON.stringify(String(el.value))}`);
    if (el.placeholder != null && el.placeholder !== '' && (el.value == null || el.value === '')) out.push(`placeholder ${JSON.stringify(String(el.placeholder))}`);
    if (el.checked != null) out.push(el.checked ? 'checked' : 'not checked');
    if (el.disabled) out.push('disabled');
    if (el.input_type) out.push(`type ${String(el.input_type)}`);
    if (Array.isArray(el.options) && el.options.length) out.push(`${el.options.length} options`);
    if (el.href) out.push(`→ ${String(el.href)}`);
    return out;
  }

  function node(el, highlight) {
    const id = String(el.id);
    const li = h('li', { class: 'a11y-node', tabindex: 0, dataset: { id } },
      h('span', { class: 'a11y-num mono' }, `[${id}]`), ' ',
      h('span', { class: 'a11y-role' }, String(el.role || el.tag || '?')), ' ',
      h('span', { class: 'a11y-name' }, JSON.stringify(String(el.label == null ? '' : el.label))),
      states(el).map((s) => h('span', { class: 'a11y-state muted' }, ' · ' + s)));
    li.addEventListener('mouseenter', () => highlight(id, true));
    li.addEventListener('mouseleave', () => highlight(id, false));
    li.addEventListener('focus', () => highlight(id, true));
    li.addEventListener('blur', () => highlight(id, false));
    return li;
  }

  // The tree for one step; `overlay` holds the element boxes (when shown) to outline.
  function a11yTree(step, overlay) {
    const els = (Array.isArray(step.elements) ? step.elements : []).filter((e) => e && typeof e === 'object');
    const highlight = (id, on) => {
      for (const box of overlay.querySelectorAll('.el-box')) {
        if (box.dataset.id === id) box.classList.toggle('el-box-hl', on);
      }
    };
    const inView = els.filter((e) => e.in_viewport !== false).sort(readingOrder);
    const off = els.filter((e) => e.in_viewport === false).sort(readingOrder);
    const root = h('li', { class: 'a11y-root' },
      h('span', { class: 'a11y-role' }, 'page'), ' ',
      h('span', { class: 'a11y-name' }, JSON.stringify(String(step.title == null ? '' : step.title))),
      h('ul', { class: 'a11y-children' },
        inView.map((e) => node(e, highlight)),
        off.length ? h('li', { class: 'a11y-group' }, h('span', { class: 'muted' }, `off-screen (${off.length})`),
          h('ul', { class: 'a11y-children' }, off.map((e) => node(e, highlight)))) : null));
    return h('div', { class: 'a11y', id: 'a11y-tree' },
      els.length === 0 ? h('p', { class: 'muted' }, 'No numbered elements on this page.') : null,
      h('ul', { class: 'a11y-list', role: 'tree', 'aria-label': 'Accessibility view of the step' }, root),
      h('p', { class: 'hint muted small' },
        'Derived from the numbered elements the policy was shown (role, accessible name, state); the number is what its actions refer to.'));
  }

  SG.replay = SG.replay || {};
  SG.replay.a11yTree = a11yTree;
})();
