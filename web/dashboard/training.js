// surfgym training pages: follow the run's event stream and swap in the re-rendered page
// (the server draws the plots; this file only refreshes them), and post the page's pause /
// resume / cancel buttons. No inline script anywhere (the CSP forbids it).
(function () {
  'use strict';
  const main = document.getElementById('app');
  if (!main) return;
  const live = document.getElementById('live');
  let busy = false;

  // Fetches this page again and puts its <main> in place of ours.
  async function refresh() {
    if (busy) return;
    busy = true;
    try {
      const resp = await fetch(location.pathname + location.search, { headers: { accept: 'text/html' } });
      if (!resp.ok) return;
      const doc = new DOMParser().parseFromString(await resp.text(), 'text/html');
      const fresh = doc.getElementById('app');
      if (!fresh) return;
      const open = main.querySelector('details[open]') !== null;
      main.replaceChildren(...fresh.childNodes);
      if (open) { const d = main.querySelector('details'); if (d) d.open = true; }
      if (fresh.dataset.events && !source) follow(fresh.dataset.events);
    } finally { busy = false; }
  }

  let source = null;
  function follow(url) {
    if (!window.EventSource) return;
    source = new EventSource(url);
    source.addEventListener('open', () => { if (live) live.hidden = false; });
    source.addEventListener('error', () => { if (live) live.hidden = true; });
    source.addEventListener('run', async (ev) => {
      let run;
      try { run = JSON.parse(ev.data); } catch (_) { return; }
      await refresh();
      if (['completed', 'cancelled', 'failed'].includes(run.state)) {
        source.close();
        source = null;
        if (live) live.hidden = true;
      }
    });
  }

  main.addEventListener('click', async (ev) => {
    const button = ev.target.closest('button[data-action]');
    const box = button && button.closest('[data-run]');
    if (!box) return;
    button.disabled = true;
    const resp = await fetch('/api/training-runs/' + encodeURIComponent(box.dataset.run) + '/' + button.dataset.action, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}',
    });
    if (!resp.ok) {
      let message = resp.status + '';
      try { message = (await resp.json()).error.message; } catch (_) { /* keep the status */ }
      const err = box.querySelector('.control-error');
      if (err) err.textContent = message;
      button.disabled = false;
      return;
    }
    await refresh();
  });

  if (main.dataset.events) follow(main.dataset.events);
})();
