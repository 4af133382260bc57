// surfgym dashboard — live progress on the campaign list: `GET /api/campaigns/events`
// pushes a `campaigns` event whenever a campaign starts, advances or ends, and the list
// redraws then, without a reload. The server ends the stream while nothing runs and the
// browser reconnects on its own (the event's `retry`); the list's own polling stays as
// the fallback.
'use strict';

(function () {
  const SG = window.surfgym;

  // Calls `onChange` on every event while view `v` is shown.
  function watchList(v, onChange) {
    if (!window.EventSource || !SG.alive(v)) return;
    const source = new EventSource('/api/campaigns/events');
    v.cleanups.push(() => source.close());
    source.addEventListener('campaigns', () => {
      if (SG.alive(v)) onChange();
      else source.close();
    });
  }

  SG.watchList = watchList;
})();
