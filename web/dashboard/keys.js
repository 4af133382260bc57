// surfgym dashboard — keyboard navigation of lists: table rows that open something are
// focusable (Tab reaches them, focus is drawn), ↑ ↓ (or k j) move between the rows of a
// table, Enter opens the focused row (its link: a row link's target, or a triage group's
// first example). The replay's own keys are in replay.js.
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
      const a = row.querySelector('a[href]');
      if (a) { e.preventDefault(); a.click(); }
    }
  });

  const app = document.getElementById('app');
  new MutationObserver(() => focusable(app)).observe(app, { childList: true, subtree: true });
})();
