// surfgym dashboard — the replay's accessibility view of a step: what the policy could
// address, as a screen reader would list it, each node with its element number.
//
// A step recorded with --ax-tree stores Chromium's accessibility tree as the policy was
// shown it (`ax_tree`: one node a line, indented by depth, numbered elements as
// `[N] role "name"`); the view shows that tree line by line. Other steps store only the
// numbered elements (role, accessible name, value, state, box), and the view is derived
// from those: the page (its title) at the root, then the elements in the viewport in
// reading order (top to bottom, left to right), then those off-screen. Either way,
// hovering or focusing a numbered node outlines its box on the screenshot. Everything
// from the page is inserted as text, never as markup.
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
    return hoverable(h('li', { class: 'a11y-node', tabindex: 0, dataset: { id } },
      h('span', { class: 'a11y-num mono' }, `[${id}]`), ' ',
      h('span', { class: 'a11y-role' }, String(el.role || el.tag || '?')), ' ',
      h('span', { class: 'a11y-name' }, JSON.stringify(String(el.label == null ? '' : el.label))),
      states(el).map((s) => h('span', { class: 'a11y-state muted' }, ' · ' + s))), id, highlight);
  }

  function outliner(overlay) {
    return (id, on) => {
      for (const box of overlay.querySelectorAll('.el-box')) {
        if (box.dataset.id === id) box.classList.toggle('el-box-hl', on);
      }
    };
  }

  function hoverable(li, id, highlight) {
    li.addEventListener('mouseenter', () => highlight(id, true));
    li.addEventListener('mouseleave', () => highlight(id, false));
    li.addEventListener('focus', () => highlight(id, true));
    li.addEventListener('blur', () => highlight(id, false));
    return li;
  }

  // One line of a recorded tree: indented by its depth (two spaces a level); a numbered
  // element (`[N] ...`) is focusable and outlines its box, like a derived node.
  const NUMBERED = /^\[(\d+)\] (.*)$/;
  function recordedLine(line, highlight) {
    const body = line.trimStart();
    const depth = Math.min(Math.floor((line.length - body.length) / 2), 40);
    const style = { paddingLeft: (depth * 12 + 4) + 'px' };
    const m = NUMBERED.exec(body);
    if (!m) return h('li', { class: 'a11y-line', style }, body);
    return hoverable(h('li', { class: 'a11y-node', tabindex: 0, style, dataset: { id: m[1] } },
      h('span', { class: 'a11y-num mono' }, `[${m[1]}]`), ' ', m[2]), m[1], highlight);
  }

  function recordedTree(step, highlight) {
    const lines = String(step.ax_tree).split('\n').filter((l) => l.trim() !== '');
    return h('div', { class: 'a11y', id: 'a11y-tree', dataset: { source: 'recorded' } },
      lines.length === 0 ? h('p', { class: 'muted' }, 'The recorded tree is empty.') : null,
      h('ul', { class: 'a11y-list a11y-recorded mono', role: 'tree', 'aria-label': 'Accessibility tree of the step' },
        lines.map((l) => recordedLine(l, highlight))),
      h('p', { class: 'hint muted small' },
        'Recorded with --ax-tree: the full tree, as the policy was shown it; [N] is the element number its actions refer to.'));
  }

  function derivedTree(step, highlight) {
    const els = (Array.isArray(step.elements) ? step.elements : []).filter((e) => e && typeof e === 'object');
    const inView = els.filter((e) => e.in_viewport !== false).sort(readingOrder);
    const off = els.filter((e) => e.in_viewport === false).sort(readingOrder);
    const root = h('li', { class: 'a11y-root' },
      h('span', { class: 'a11y-role' }, 'page'), ' ',
      h('span', { class: 'a11y-name' }, JSON.stringify(String(step.title == null ? '' : step.title))),
      h('ul', { class: 'a11y-children' },
        inView.map((e) => node(e, highlight)),
        off.length ? h('li', { class: 'a11y-group' }, h('span', { class: 'muted' }, `off-screen (${off.length})`),
          h('ul', { class: 'a11y-children' }, off.map((e) => node(e, highlight)))) : null));
    return h('div', { class: 'a11y', id: 'a11y-tree', dataset: { source: 'derived' } },
      els.length === 0 ? h('p', { class: 'muted' }, 'No numbered elements on this page.') : null,
      h('ul', { class: 'a11y-list', role: 'tree', 'aria-label': 'Accessibility view of the step' }, root),
      h('p', { class: 'hint muted small' },
        'Derived from the elements the policy was shown (role, accessible name, state): the full tree is recorded only with --ax-tree. The number is what its actions refer to.'));
  }

  function recorded(step) {
    return typeof step.ax_tree === 'string';
  }

  // The tree for one step; `overlay` holds the element boxes (when shown) to outline.
  function a11yTree(step, overlay) {
    const highlight = outliner(overlay);
    return recorded(step) ? recordedTree(step, highlight) : derivedTree(step, highlight);
  }

  // What the view's heading says it shows.
  function a11ySummary(step) {
    if (recorded(step)) return 'Accessibility tree (recorded)';
    return `Elements the policy could address (${Array.isArray(step.elements) ? step.elements.length : 0}; derived)`;
  }

  SG.replay = SG.replay || {};
  SG.replay.a11yTree = a11yTree;
  SG.replay.a11ySummary = a11ySummary;
})();
