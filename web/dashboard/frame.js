// surfgym dashboard — the page frame's live parts, loaded by every page. The frame itself
// (the top bar: brand, links, live indicator, sign-in slot) is rendered once, on the server
// (web/src/page.rs); this fills, the same way on every page:
//   #session      who this browser is signed in as and a way out, or a way in (the cookie
//                 is HttpOnly: only the server knows it); nothing when the server asks for
//                 no tokens;
//   #tasks-count  the number of tasks, unless the page's own script filled it first.
// Everything from the server goes into the DOM as text; no inline script (the CSP).
'use strict';

(function () {
  const slot = document.getElementById('session');
  const pill = document.getElementById('tasks-count');
  const UNFILLED = '…';

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = String(text);
    return e;
  }

  async function call(method, path) {
    const init = { method: method, headers: { Accept: 'application/json' }, credentials: 'same-origin', cache: 'no-store' };
    if (method !== 'GET') {
      init.headers['Content-Type'] = 'application/json';
      init.body = '{}';
    }
    const res = await fetch(path, init);
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    return res.json();
  }

  function showSession(s) {
    if (!slot || !s || s.access === 'open') return;
    const t = s.token;
    if (!t) {
      // On the sign-in page itself a link to it would lead nowhere.
      slot.replaceChildren(location.pathname === '/signin'
        ? el('span', { class: 'muted small', id: 'signed-out' }, 'Not signed in')
        : el('a', { class: 'nav-link', id: 'signin-link', href: '/signin?next=' + encodeURIComponent(location.pathname + location.search + location.hash) }, 'Sign in'));
      return;
    }
    const out = el('button', { type: 'button', class: 'btn btn-small btn-ghost', id: 'signout' }, 'Sign out');
    out.addEventListener('click', async () => {
      out.disabled = true;
      try { await call('DELETE', '/api/session'); } catch (_) { /* the cookie is cleared or already gone */ }
      location.assign('/signin');
    });
    slot.replaceChildren(el('span', { class: 'muted small', id: 'signed-in', title: t.name || '' }, `${t.prefix}… (${t.scope})`), ' ', out);
  }

  async function showTasksCount(s) {
    if (!pill) return;
    let text = '—';
    // Reads need a token only when the server asks for one everywhere.
    if (s && (s.access !== 'everything' || s.token)) {
      try {
        const r = await call('GET', '/api/tasks?limit=1');
        if (r && typeof r.total === 'number') text = r.total.toLocaleString('en-US');
      } catch (_) { /* a dash */ }
    }
    if (pill.textContent === UNFILLED) pill.textContent = text;
  }

  call('GET', '/api/session')
    .catch(() => null)
    .then((s) => {
      showSession(s);
      return showTasksCount(s);
    });
})();
