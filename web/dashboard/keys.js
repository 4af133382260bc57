// surfgym dashboard — keyboard navigation of lists: table rows that open something are
// focusable (Tab reaches them, focus is drawn), ↑ ↓ (or k j) move between the rows of a
// table, Enter opens the focused row (its link: a row link's target, or a triage group's
// first example; a row without a link, itself). A redrawn list gives the focus back to the
// row it had. The replay's own keys are in replay.js.
'use strict';

(function () {
  const ROWS = 'tr.row-link, tr.triage-row';

  function typing(t) {
    return t && (t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' || t.tagName === 'INPUT' || t.isContentEditable);
  }

  // Rows a list renders later (every refresh) become focusable as they appear.
  function focusable(root) {
    for (const tr of root.querySelectorAll(ROWS)) {
      if (!tr.hasAttribute('tabindex')) tr.setAttribute('tabindex', '0');
    }
  }

  document.addEventListener('keydown', (e) => {
    if (e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey || typing(e.target)) return;
    const row = e.target && e.target.closest && e.target.closest(ROWS);
    if (!row || e.target !== row) return;
    const down = e.key === 'ArrowDown' || e.key === 'j';
    const up = e.key === 'ArrowUp' || e.key === 'k';
    if (down || up) {
      const rows = Array.from(row.parentElement.querySelectorAll(':scope > ' + ROWS.split(', ').join(', :scope > ')))
        .filter((r) => !r.hidden);
      const j = rows.indexOf(row) + (down ? 1 : -1);
      if (j >= 0 && j < rows.length) rows[j].focus();
      e.preventDefault();
    } else if (e.key === 'Enter') {
      // The row's link, else the row itself (a task row expands).
      const a = row.querySelector('a[href]');
      e.preventDefault();
      (a || row).click();
    }
  });

  // Live lists redraw their rows; the focused row's successor (same data-id in the same
  // table) takes the focus back, so keyboard users keep their place.
  let focused = null;
  document.addEventListener('focusin', (e) => {
    const row = e.target && e.target.closest && e.target.closest(ROWS);
    const table = row && row.closest('table[id]');
    focused = row && row.dataset.id && table && e.target === row ? { row, id: row.dataset.id, table: table.id } : null;
  });
  function refocus() {
    if (!focused || focused.row.isConnected) return;
    const active = document.activeElement;
    if (active && active !== document.body) return;
    for (const tr of document.querySelectorAll(`#${CSS.escape(focused.table)} ${ROWS.split(', ').join(', #' + CSS.escape(focused.table) + ' ')}`)) {
      if (tr.dataset.id === focused.id) { tr.focus({ preventScroll: true }); return; }
    }
  }

  const app = document.getElementById('app');
  new MutationObserver(() => { focusable(app); refocus(); }).observe(app, { childList: true, subtree: true });
})();
