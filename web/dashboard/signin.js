// The sign-in page: posts the pasted token to /api/session, which answers with an
// HttpOnly cookie (this script never sees it again), then goes back to the dashboard.
// Who is signed in, and signing out, are the page frame's (frame.js), as on every page.
(function () {
  'use strict';
  const form = document.getElementById('signin-form');
  const input = document.getElementById('token');
  const message = document.getElementById('signin-message');

  async function call(method, body) {
    const res = await fetch('/api/session', {
      method: method,
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin',
      cache: 'no-store',
    });
    let json = null;
    try { json = await res.json(); } catch (_) { json = null; }
    return { ok: res.ok, status: res.status, json: json };
  }

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    message.textContent = 'Checking…';
    const r = await call('POST', { token: input.value.trim() });
    if (r.ok) {
      input.value = '';
      message.textContent = 'Signed in.';
      const back = new URLSearchParams(location.search).get('next');
      location.assign(back && back.startsWith('/') && !back.startsWith('//') ? back : '/');
      return;
    }
    const err = r.json && r.json.error;
    message.textContent = err && err.message ? err.message : `Sign-in failed (HTTP ${r.status}).`;
  });

  document.body.dataset.ready = '1';
})();
