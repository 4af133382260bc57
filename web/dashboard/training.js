// surfgym training pages: follow the run's event stream and swap in the re-rendered page
// (the server draws the plots; this file only refreshes them). No inline script anywhere.
(function () {
  'use strict';
  const main = document.getElementById('app');
  const url = main && main.dataset.events;
  if (!url || !window.EventSource) return;
  const live = document.getElementById('live');
  const es = new EventSource(url);
  let busy = false;
  es.addEventListener('open', () => { if (live) live.hidden = false; });
  es.addEventListener('error', () => { if (live) live.hidden = true; });
  es.addEventListener('run', async (ev) => {
    let run;
    try { run = JSON.parse(ev.data); } catch (_) { return; }
    if (busy) return;
    busy = true;
    try {
      const resp = await fetch(location.pathname, { headers: { accept: 'text/html' } });
      if (resp.ok) {
        const doc = new DOMParser().parseFromString(await resp.text(), 'text/html');
        const fresh = doc.getElementById('app');
        if (fresh) {
          const open = main.querySelector('details[open]') !== null;
          main.replaceChildren(...fresh.childNodes);
          if (open) { const d = main.querySelector('details'); if (d) d.open = true; }
        }
      }
    } finally { busy = false; }
    if (['completed', 'cancelled', 'failed'].includes(run.state)) {
      es.close();
      if (live) live.hidden = true;
    }
  });
})();
