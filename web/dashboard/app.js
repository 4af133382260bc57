// surfgym dashboard — a single-page app with hash routes, no dependencies.
//
// Routes:
//   #/                       campaigns list
//   #/campaigns/{id}         one campaign and its episodes (?filter=all|successes|failures&offset=N)
//   #/episodes/{id}          episode replay (?step=N|final)
//   #/tasks                  task catalogue (?offset=N)
//
// Safety: everything that comes from the API (pages, tasks, model output) is put into the DOM
// with textContent / setAttribute only; innerHTML is never used.
//
// The top bar around the views is the page frame every dashboard page shares (rendered by
// web/src/page.rs); who is signed in, in it, is frame.js's. This file marks the current
// link (setNav) and keeps the tasks count and the live indicator up to date.
'use strict';

(function () {
  const POLL_MS = 2000;
  const IDLE_POLL_MS = 15000;
  const CAMPAIGN_PAGE = 50;
  const EPISODE_PAGE = 100;
  const TASK_PAGE = 100;
  // Episodes of campaigns stored before campaigns recorded their screen rendered at this.
  const DEFAULT_VIEWPORT = { width: 1280, height: 720 };
  const ACTIVE = new Set(['queued', 'running']);
  const app = document.getElementById('app');
  const banner = document.getElementById('banner');

  // ---------------------------------------------------------------- DOM helpers

  // h('div', {class: 'x', id: 'y', title: t, onclick: f}, child, ...)
  // Children: strings and numbers become text nodes; null/false/undefined are skipped; arrays flatten.
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    if (attrs) {
      for (const [k, v] of Object.entries(attrs)) {
        if (v === null || v === undefined || v === false) continue;
        if (k === 'class') el.className = Array.isArray(v) ? v.filter(Boolean).join(' ') : v;
        else if (k === 'text') el.textContent = String(v);
        else if (k === 'dataset') Object.assign(el.dataset, v);
        else if (k === 'style') Object.assign(el.style, v);
        else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
        else if (v === true) el.setAttribute(k, '');
        else el.setAttribute(k, String(v));
      }
    }
    append(el, children);
    return el;
  }

  function append(el, children) {
    for (const c of children) {
      if (c === null || c === undefined || c === false) continue;
      if (Array.isArray(c)) append(el, c);
      else if (c instanceof Node) el.appendChild(c);
      else el.appendChild(document.createTextNode(String(c)));
    }
  }

  // A class-safe token from data (status names and the like).
  function token(s) {
    return String(s == null ? 'unknown' : s).toLowerCase().replace(/[^a-z0-9_-]/g, '') || 'unknown';
  }

  // Shows a URL from data as text, and as a link only when its scheme is http(s).
  function urlText(url, cls) {
    if (url == null || url === '') return h('span', { class: 'muted' }, '—');
    let ok = false;
    try {
      const u = new URL(String(url));
      ok = u.protocol === 'http:' || u.protocol === 'https:';
    } catch (_) {
      ok = false;
    }
    const c = ['mono', 'url', cls];
    if (!ok) return h('span', { class: c, title: String(url) }, String(url));
    const a = h('a', { class: c, target: '_blank', rel: 'noopener noreferrer', title: String(url) }, String(url));
    a.setAttribute('href', String(url));
    return a;
  }

  function internal(href, ...children) {
    const a = h('a', null, ...children);
    a.setAttribute('href', href);
    return a;
  }

  const enc = (s) => encodeURIComponent(String(s));
  const campaignHref = (id, q) => '#/campaigns/' + enc(id) + (q ? '?' + q : '');
  const episodeHref = (id) => '#/episodes/' + enc(id);
  const blobSrc = (hash) => '/api/blobs/' + enc(hash);

  // ---------------------------------------------------------------- formatting

  const dash = () => h('span', { class: 'muted' }, '—');

  function fmtInt(n) {
    if (n == null || Number.isNaN(Number(n))) return '—';
    return Number(n).toLocaleString('en-US');
  }

  function fmtPct(x) {
    if (x == null || Number.isNaN(Number(x))) return '—';
    const v = Math.round(Number(x) * 1000) / 10;
    return (Number.isInteger(v) ? v.toFixed(0) : v.toFixed(1)) + '%';
  }

  function fmtScore(x) {
    if (x == null || Number.isNaN(Number(x))) return '—';
    return Number(x).toFixed(2);
  }

  function fmtMs(ms) {
    if (ms == null || Number.isNaN(Number(ms))) return '—';
    ms = Number(ms);
    if (ms < 1000) return Math.round(ms) + ' ms';
    if (ms < 60000) return (ms / 1000).toFixed(1) + ' s';
    const s = Math.round(ms / 1000);
    const hrs = Math.floor(s / 3600);
    const m = Math.floor((s % 3600) / 60);
    const sec = s % 60;
    if (hrs > 0) return hrs + 'h ' + String(m).padStart(2, '0') + 'm';
    return m + 'm ' + String(sec).padStart(2, '0') + 's';
  }

  function parseTime(iso) {
    if (!iso) return null;
    const d = new Date(iso);
    return Number.isNaN(d.getTime()) ? null : d;
  }

  const pad = (n) => String(n).padStart(2, '0');

  function fmtAbs(d) {
    const now = new Date();
    const hms = pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
    if (d.toDateString() === now.toDateString()) return 'today ' + hms;
    return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' + hms;
  }

  function fmtAgo(d) {
    const s = Math.round((Date.now() - d.getTime()) / 1000);
    if (s < 5) return 'just now';
    if (s < 60) return s + 's ago';
    if (s < 3600) return Math.floor(s / 60) + 'm ago';
    if (s < 86400) return Math.floor(s / 3600) + 'h ago';
    return Math.floor(s / 86400) + 'd ago';
  }

  function timeEl(iso, withAgo) {
    const d = parseTime(iso);
    if (!d) return dash();
    return h('time', { datetime: String(iso), title: d.toString() }, fmtAbs(d),
      withAgo ? h('span', { class: 'muted ago' }, ' · ' + fmtAgo(d)) : null);
  }

  // An episode's status as shown: a finished episode whose rubric could not be evaluated
  // is `judge_error` (neither success nor failure).
  function episodeStatus(e) {
    return e && e.judge_error ? 'judge_error' : e && e.status;
  }

  function badge(status, extraText) {
    const t = token(status);
    return h('span', { class: ['badge', 'badge-' + t] }, extraText || String(status == null ? 'unknown' : status));
  }

  function successMark(success) {
    if (success === true) return h('span', { class: 'mark mark-ok', title: 'success' }, '✓');
    if (success === false) return h('span', { class: 'mark mark-fail', title: 'failure' }, '✗');
    return dash();
  }

  // Segmented bar: successes, other finished, failed, running; remainder is pending (or
  // cancelled).
  function progressBar(c, big) {
    const total = Number(c.total_episodes) || 0;
    const counts = c.counts || {};
    const succ = Number(c.successes) || 0;
    const finished = Number(counts.finished) || 0;
    const failed = Number(counts.failed) || 0;
    const running = Number(counts.running) || 0;
    const done = finished + failed;
    const pct = (n) => (total > 0 ? Math.max(0, Math.min(100, (n / total) * 100)) : 0) + '%';
    const bar = h('div', {
      class: ['progress', big ? 'progress-big' : null],
      role: 'progressbar',
      'aria-valuemin': 0,
      'aria-valuemax': total,
      'aria-valuenow': done,
      title: `${succ} succeeded · ${finished - succ} finished without success · ${failed} failed · ${running} running · ${Number(counts.pending) || 0} pending${counts.cancelled ? ` · ${Number(counts.cancelled)} cancelled` : ''}`,
    },
    h('span', { class: 'seg seg-success', style: { width: pct(succ) } }),
    h('span', { class: 'seg seg-finished', style: { width: pct(Math.max(0, finished - succ)) } }),
    h('span', { class: 'seg seg-failed', style: { width: pct(failed) } }),
    h('span', { class: 'seg seg-running', style: { width: pct(running) } }));
    const label = h('span', { class: 'progress-label' }, `${fmtInt(done)} / ${fmtInt(total)}`,
      h('span', { class: 'muted' }, ' · ' + fmtPct(total > 0 ? done / total : c.progress)));
    return h('div', { class: ['progress-wrap', big ? 'progress-wrap-big' : null] }, bar, label);
  }

  function describeTaskFilter(t) {
    if (!t || typeof t !== 'object') return 'all tasks';
    const parts = [];
    for (const k of ['site', 'tag', 'difficulty', 'split']) {
      if (t[k] != null && t[k] !== '') parts.push(k + '=' + t[k]);
    }
    if (Array.isArray(t.ids) && t.ids.length) {
      const shown = t.ids.slice(0, 3).join(', ');
      parts.push('ids=' + shown + (t.ids.length > 3 ? ` +${t.ids.length - 3} more` : ''));
    }
    return parts.length ? parts.join(' · ') : 'all tasks';
  }

  // The policy that ran an episode: name, model and the start of its fingerprint, sampling.
  function describePolicy(p) {
    const parts = [String(p.name)];
    if (p.model) parts.push(String(p.model));
    if (p.fingerprint) parts.push(String(p.fingerprint).replace(/^sha256:/, '').slice(0, 12));
    if (p.endpoint) parts.push(String(p.endpoint));
    if (p.sampling) parts.push(Number(p.sampling.temperature) === 0 ? 'greedy' : `T=${p.sampling.temperature}, top-p ${p.sampling.top_p}`);
    return parts.join(' · ');
  }

  // What a campaign's pages render at; campaigns without one follow each worker's options.
  function describeScreen(s) {
    if (!s || typeof s !== 'object') return "each worker's own";
    let out = `${s.width}×${s.height}`;
    if (s.device_scale != null && Number(s.device_scale) !== 1) out += ` @${s.device_scale}x`;
    if (s.screenshot_scale != null && Number(s.screenshot_scale) !== 1) out += `, screenshots at ${s.screenshot_scale}`;
    return out;
  }

  // ---------------------------------------------------------------- API

  class ApiError extends Error {
    constructor(status, type, message, fields) {
      super(message);
      this.status = status;
      this.type = type;
      this.fields = fields || [];
    }
  }

  async function api(path, opts) {
    let res;
    try {
      res = await fetch(path, Object.assign({ headers: { Accept: 'application/json' }, cache: 'no-store' }, opts || {}));
    } catch (e) {
      throw new ApiError(0, 'network', 'Cannot reach the surfgym server.');
    }
    let body = null;
    let text = '';
    try {
      text = await res.text();
      // Seeds are u64/i64 and can exceed 2^53; keep them exact as strings (JSON strings cannot
      // contain an unescaped `"seed":`, so this only touches real keys).
      body = text ? JSON.parse(text.replace(/"seed":\s*(-?\d{16,})/g, '"seed":"$1"')) : null;
    } catch (_) {
      body = null;
    }
    if (!res.ok) {
      const e = body && typeof body === 'object' ? body.error : null;
      // A read that needs a token (the server listens beyond loopback, or the session was
      // revoked): sign in, then come back here.
      if (res.status === 401 && (!opts || !opts.method || opts.method === 'GET')) {
        location.assign('/signin?next=' + encodeURIComponent(location.pathname + location.hash));
      }
      const msg = e && e.message ? String(e.message) : `HTTP ${res.status}${res.statusText ? ' ' + res.statusText : ''}`;
      throw new ApiError(res.status, e && e.type ? String(e.type) : 'http', msg, e && Array.isArray(e.fields) ? e.fields : []);
    }
    if (body === null && text) throw new ApiError(res.status, 'parse', 'The server sent a response that is not JSON.');
    return body;
  }

  function post(path) {
    return api(path, { method: 'POST', headers: { Accept: 'application/json', 'Content-Type': 'application/json' }, body: '{}' });
  }

  // ---------------------------------------------------------------- banner

  function hintFor(err) {
    if (!(err instanceof ApiError)) return 'Reload the page; if it keeps happening, check the browser console.';
    if (err.status === 0) return 'Check that the surfgym server is still running (e.g. `surfgym demo` or `surfgym serve`); the page retries automatically while live.';
    if (err.status === 404) return 'It may have been deleted, or the link is wrong. Go back to the campaigns list.';
    if (err.status === 409) return 'The campaign is not in a state that allows this; refresh to see its current status.';
    if (err.status === 401) return 'Sign in with an API token (top right) to do this.';
    if (err.status === 403 && err.type === 'insufficient_scope') return 'Sign in with a token of the scope named above (top right).';
    if (err.status >= 500) return 'The server failed; its log has the details. Retry in a moment.';
    if (err.status >= 400) return 'The request was rejected; see the message above.';
    return 'Retry in a moment.';
  }

  // source: 'view' (failed to load the view), 'poll' (transient), 'action' (a button).
  function showBanner(err, source, title) {
    const msgText = String(err && err.message ? err.message : err);
    const fields = err instanceof ApiError && err.fields.length &&
      !err.fields.every((f) => msgText.includes(String(f.message || '')) && msgText.includes(String(f.field || '')))
      ? h('ul', { class: 'banner-fields' }, err.fields.map((f) =>
        h('li', null, h('code', null, String(f.field || '')), ': ', String(f.message || ''))))
      : null;
    const status = err instanceof ApiError && err.status ? ` (HTTP ${err.status}${err.type && err.type !== 'http' ? ', ' + err.type : ''})` : '';
    banner.replaceChildren(
      h('div', { class: 'banner-body' },
        h('strong', { class: 'banner-title' }, (title || 'Something went wrong') + status),
        h('span', { id: 'banner-message', class: 'banner-message' }, msgText),
        fields,
        h('span', { class: 'banner-hint' }, hintFor(err))),
      h('div', { class: 'banner-actions' },
        err instanceof ApiError && err.status === 404 ? internal('#/', 'Campaigns') : null,
        h('button', { type: 'button', class: 'btn btn-small', onclick: () => route() }, 'Retry'),
        h('button', { type: 'button', class: 'btn btn-small btn-ghost', 'aria-label': 'Dismiss', onclick: hideBanner }, '×')));
    banner.className = 'banner banner-error';
    banner.dataset.source = source || 'view';
    banner.hidden = false;
  }

  function hideBanner() {
    banner.hidden = true;
    banner.replaceChildren();
    delete banner.dataset.source;
  }

  function clearPollBanner() {
    if (!banner.hidden && banner.dataset.source === 'poll') hideBanner();
  }

  // ---------------------------------------------------------------- view lifecycle

  let current = null; // { id, timer, cleanups: [] }
  let viewSeq = 0;

  function beginView() {
    endView();
    current = { id: ++viewSeq, timer: null, cleanups: [] };
    document.body.dataset.ready = '0';
    return current;
  }

  function endView() {
    if (!current) return;
    if (current.timer) clearTimeout(current.timer);
    for (const f of current.cleanups) {
      try { f(); } catch (_) { /* ignore */ }
    }
    current.dead = true;
    current = null;
    setLive(false);
  }

  const alive = (v) => v === current && !v.dead;

  // Runs fn after ms, once; a later call replaces an earlier one. Waits while the tab is hidden.
  function schedule(v, fn, ms) {
    if (!alive(v)) return;
    if (v.timer) clearTimeout(v.timer);
    v.pending = fn;
    v.timer = setTimeout(() => {
      v.timer = null;
      if (!alive(v)) return;
      if (document.hidden) { schedule(v, fn, ms); return; }
      v.pending = null;
      fn();
    }, ms);
  }

  function setLive(on) {
    document.getElementById('live').hidden = !on;
  }

  function ready() {
    document.body.dataset.ready = '1';
  }

  function setNav(which) {
    for (const id of ['nav-campaigns', 'nav-tasks', 'nav-triage']) {
      document.getElementById(id).classList.toggle('active', id === 'nav-' + which);
    }
  }

  // Replaces a container's children, keeping the window's scroll position.
  function swap(el, ...children) {
    const x = window.scrollX;
    const y = window.scrollY;
    el.replaceChildren();
    append(el, children);
    if (window.scrollY !== y || window.scrollX !== x) window.scrollTo(x, y);
  }

  function pager(total, offset, limit, hrefFor) {
    const from = total === 0 ? 0 : offset + 1;
    const to = Math.min(offset + limit, total);
    const prev = offset > 0 ? internal(hrefFor(Math.max(0, offset - limit)), '← Prev') : h('span', { class: 'btn-disabled' }, '← Prev');
    const next = offset + limit < total ? internal(hrefFor(offset + limit), 'Next →') : h('span', { class: 'btn-disabled' }, 'Next →');
    prev.classList.add('btn', 'btn-small', 'pager-prev');
    next.classList.add('btn', 'btn-small', 'pager-next');
    if (total <= limit && offset === 0) return h('div', { class: 'pager' }, h('span', { class: 'muted' }, `${fmtInt(total)} total`));
    return h('div', { class: 'pager' },
      h('span', { class: 'muted' }, `${fmtInt(from)}–${fmtInt(to)} of ${fmtInt(total)}`), prev, next);
  }

  function emptyState(...children) {
    return h('div', { class: 'empty' }, ...children);
  }

  // Tasks total for the nav pill (and the campaigns summary).
  let tasksTotal = null;
  async function loadTasksTotal() {
    try {
      const r = await api('/api/tasks?limit=1');
      tasksTotal = r && typeof r.total === 'number' ? r.total : null;
    } catch (_) {
      /* keep the last value */
    }
    document.getElementById('tasks-count').textContent = tasksTotal == null ? '—' : fmtInt(tasksTotal);
    return tasksTotal;
  }

  // ---------------------------------------------------------------- #/ campaigns

  async function viewCampaigns(v, params) {
    setNav('campaigns');
    document.title = 'Campaigns · surfgym';
    const offset = Math.max(0, parseInt(params.get('offset') || '0', 10) || 0);
    const stats = h('div', { class: 'stats', id: 'campaign-stats' });
    const body = h('div', { id: 'campaigns-body' });
    swap(app,
      h('div', { class: 'page-head' },
        h('div', null,
          h('h1', null, 'Campaigns'),
          h('p', { class: 'subtitle' }, 'Batches of episodes run by a policy over the task catalogue. Newest first.'))),
      stats, body);

    let first = true;
    let lastKey = null;
    const load = async () => {
      let data;
      let total = tasksTotal;
      try {
        [data, total] = await Promise.all([
          api(`/api/campaigns?limit=${CAMPAIGN_PAGE}&offset=${offset}`),
          loadTasksTotal(),
        ]);
      } catch (err) {
        if (!alive(v)) return;
        showBanner(err, first ? 'view' : 'poll', first ? 'Could not load campaigns' : 'Lost contact with the server');
        if (first) { swap(body, emptyState('Campaigns could not be loaded.')); ready(); }
        schedule(v, load, POLL_MS);
        first = false;
        return;
      }
      if (!alive(v)) return;
      clearPollBanner();
      const items = (data && Array.isArray(data.items) ? data.items : []).slice();
      const ts = (c) => { const d = parseTime(c.created_at); return d ? d.getTime() : 0; };
      items.sort((a, b) => ts(b) - ts(a));
      const active = items.filter((c) => ACTIVE.has(c.status));
      const totalCampaigns = data && typeof data.total === 'number' ? data.total : items.length;
      const key = JSON.stringify([data, total]);
      if (key === lastKey) {
        setLive(active.length > 0);
        schedule(v, load, active.length ? POLL_MS : IDLE_POLL_MS);
        return;
      }
      lastKey = key;
      swap(stats,
        stat('Campaigns', fmtInt(totalCampaigns), 'stat-campaigns'),
        stat('Active', fmtInt(active.length), 'stat-active', active.length ? 'running or queued' : 'none running'),
        stat('Tasks', total == null ? '—' : fmtInt(total), 'stat-tasks', 'in the catalogue', '#/tasks'),
        stat('Episodes done', fmtInt(items.reduce((s, c) => s + (Number(c.counts && c.counts.finished) || 0) + (Number(c.counts && c.counts.failed) || 0), 0)), 'stat-episodes', 'on this page'));
      if (items.length === 0 && offset === 0) {
        swap(body, emptyState(
          h('strong', null, 'No campaigns yet'),
          h('span', null, ' — run ', h('code', null, 'surfgym demo'), ' or ', h('code', null, 'POST /api/campaigns'), ' to start one.')));
      } else {
        swap(body, campaignsTable(items), pager(totalCampaigns, offset, CAMPAIGN_PAGE, (o) => '#/?offset=' + o));
      }
      setLive(active.length > 0);
      if (first) ready();
      first = false;
      schedule(v, load, active.length ? POLL_MS : IDLE_POLL_MS);
    };
    await load();
    if (window.surfgym.watchList) window.surfgym.watchList(v, load);
  }

  function stat(label, value, id, sub, href) {
    const inner = [h('span', { class: 'stat-label' }, label), h('span', { class: 'stat-value' }, value),
      sub ? h('span', { class: 'stat-sub' }, sub) : null];
    if (href) {
      const a = internal(href, ...inner);
      a.className = 'stat stat-link';
      a.id = id;
      return a;
    }
    return h('div', { class: 'stat', id }, ...inner);
  }

  function campaignsTable(items) {
    const head = h('thead', null, h('tr', null,
      th('Name'), th('Status'), th('Policy'), th('Progress', 'col-progress'),
      th('Pend', 'num', 'pending'), th('Run', 'num', 'running'), th('Done', 'num', 'finished (judged)'),
      th('Fail', 'num', 'failed (infrastructure)'), th('Success', 'num', 'successes / finished'),
      th('Score', 'num', 'mean partial-credit score'), th('Steps', 'num'), th('Created')));
    const rows = items.map((c) => {
      const counts = c.counts || {};
      const href = campaignHref(c.id);
      const tr = h('tr', { class: ['campaign-row', 'row-link', 'status-' + token(c.status)], dataset: { id: String(c.id) } },
        h('td', { class: 'cell-name' }, internal(href, String(c.name == null ? '' : c.name)),
          c.error ? h('div', { class: 'cell-error', title: String(c.error) }, String(c.error)) : null),
        h('td', null, badge(c.status)),
        h('td', { class: 'mono' }, String(c.policy == null ? '' : c.policy)),
        h('td', { class: 'col-progress' }, progressBar(c, false)),
        h('td', { class: 'num' }, fmtInt(counts.pending)),
        h('td', { class: ['num', counts.running ? 'num-running' : null] }, fmtInt(counts.running)),
        h('td', { class: 'num' }, fmtInt(counts.finished)),
        h('td', { class: ['num', counts.failed ? 'num-failed' : null] }, fmtInt(counts.failed)),
        h('td', { class: 'num strong' }, fmtPct(c.success_rate)),
        h('td', { class: 'num' }, fmtScore(c.mean_score)),
        h('td', { class: 'num' }, fmtInt(c.steps)),
        h('td', { class: 'nowrap' }, timeEl(c.created_at, false)));
      rowLink(tr, href);
      return tr;
    });
    return h('div', { class: 'table-wrap' }, h('table', { class: 'table', id: 'campaigns' }, head, h('tbody', null, rows)));
  }

  function th(text, cls, title) {
    return h('th', { class: cls, title, scope: 'col' }, text);
  }

  // Makes a whole row navigate, without breaking links, text selection or modified clicks.
  function rowLink(tr, href) {
    tr.addEventListener('click', (e) => {
      if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
      if (e.target.closest('a, button, input, summary')) return;
      const sel = window.getSelection && window.getSelection();
      if (sel && String(sel).length > 0) return;
      location.hash = href;
    });
  }

  // ---------------------------------------------------------------- #/campaigns/{id}

  const FILTERS = [
    { key: 'all', label: 'All', q: '' },
    { key: 'successes', label: 'Successes', q: '&success=true' },
    { key: 'failures', label: 'Failures', q: '&success=false' },
  ];

  async function viewCampaign(v, id, params) {
    setNav('campaigns');
    document.title = 'Campaign · surfgym';
    const state = {
      filter: FILTERS.some((f) => f.key === params.get('filter')) ? params.get('filter') : 'all',
      offset: Math.max(0, parseInt(params.get('offset') || '0', 10) || 0),
    };
    const header = h('div', { id: 'campaign-header' });
    const chips = h('div', { class: 'chips', role: 'group', 'aria-label': 'Filter episodes' });
    const body = h('div', { id: 'episodes-body' });
    const actionMsg = h('span', { id: 'action-message', class: 'action-message', role: 'status' });
    swap(app,
      h('nav', { class: 'crumbs' }, internal('#/', 'Campaigns'), h('span', { class: 'sep' }, '/'), h('span', { id: 'crumb-name' }, '…')),
      header,
      h('section', { class: 'panel' },
        h('div', { class: 'panel-head' },
          h('h2', null, 'Episodes'), chips),
        body));

    const hrefFor = (filter, offset) => {
      const q = [];
      if (filter !== 'all') q.push('filter=' + filter);
      if (offset) q.push('offset=' + offset);
      return campaignHref(id, q.join('&'));
    };

    let campaign = null;
    let first = true;
    let busy = false;
    let seq = 0;
    let lastHeader = null;
    let lastEpisodes = null;

    const doAction = async (action, btn) => {
      if (busy) return;
      busy = true;
      btn.disabled = true;
      actionMsg.textContent = '';
      try {
        await post(`/api/campaigns/${enc(id)}/${action}`);
        if (!alive(v)) return;
        if (!banner.hidden && banner.dataset.source === 'action') hideBanner();
        actionMsg.textContent = { pause: 'Paused.', resume: 'Resumed.', cancel: 'Cancelled.' }[action] || 'Done.';
        actionMsg.className = 'action-message ok';
      } catch (err) {
        if (!alive(v)) return;
        actionMsg.textContent = String(err.message || err);
        actionMsg.className = 'action-message error';
        showBanner(err, 'action', `Could not ${action} the campaign`);
      } finally {
        busy = false;
        btn.disabled = false;
      }
      if (alive(v)) load();
    };

    const renderChips = () => {
      const c = campaign || {};
      const finished = Number(c.counts && c.counts.finished) || 0;
      const succ = Number(c.successes) || 0;
      const count = { all: c.total_episodes, successes: succ, failures: Math.max(0, finished - succ) };
      swap(chips, FILTERS.map((f) => {
        const a = internal(hrefFor(f.key, 0), f.label, h('span', { class: 'chip-count' }, campaign ? fmtInt(count[f.key]) : ''));
        a.className = 'chip' + (state.filter === f.key ? ' active' : '');
        a.id = 'filter-' + f.key;
        a.setAttribute('aria-pressed', state.filter === f.key ? 'true' : 'false');
        a.dataset.filter = f.key;
        a.addEventListener('click', (e) => {
          if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
          e.preventDefault();
          if (state.filter === f.key && state.offset === 0) return;
          // Switch in place: no re-route, so the header and scroll position stay put.
          history.pushState(null, '', hrefFor(f.key, 0));
          state.filter = f.key;
          state.offset = 0;
          renderChips();
          body.classList.add('stale');
          load();
        });
        return a;
      }));
    };

    const renderHeader = (c, pols) => {
      const cfg = c.config && typeof c.config === 'object' ? c.config : {};
      document.title = `${c.name} · Campaign · surfgym`;
      document.getElementById('crumb-name').textContent = String(c.name == null ? '' : c.name);
      const started = parseTime(c.started_at);
      const ended = parseTime(c.finished_at);
      const elapsed = started ? (ended ? ended - started : (ACTIVE.has(c.status) ? Date.now() - started : null)) : null;
      const btn = (action, label, cls) => {
        const b = h('button', { type: 'button', id: 'btn-' + action, class: ['btn', cls] }, label);
        b.addEventListener('click', () => doAction(action, b));
        return b;
      };
      const st = c.status;
      swap(header,
        h('div', { class: 'page-head' },
          h('div', { class: 'head-main' },
            h('h1', { id: 'campaign-name' }, String(c.name == null ? '' : c.name), ' ', badge(st)),
            h('p', { class: 'subtitle' },
              'policy ', h('code', { id: 'campaign-policy' }, String(c.policy == null ? '' : c.policy)),
              h('span', { class: 'sep' }, '·'), 'created ', timeEl(c.created_at, true),
              elapsed != null ? [h('span', { class: 'sep' }, '·'), (ended ? 'ran ' : 'running for ') + fmtMs(elapsed)] : null,
              h('span', { class: 'sep' }, '·'), h('span', { class: 'mono muted id-text', title: 'campaign id' }, String(c.id)))),
          h('div', { class: 'head-actions' },
            actionMsg,
            // Only the actions its status allows: a finished campaign offers none.
            ACTIVE.has(st) ? btn('pause', 'Pause', 'btn-secondary') : null,
            st === 'paused' ? btn('resume', 'Resume', 'btn-primary') : null,
            ACTIVE.has(st) || st === 'paused' ? btn('cancel', 'Cancel', 'btn-danger') : null,
            Object.assign(internal('#/triage?campaign=' + enc(c.id), 'Triage'), { className: 'btn btn-secondary', id: 'btn-triage' }),
            // The server-rendered analysis views (per-task table, episode search, plots, compare).
            h('a', { class: ['btn', 'btn-secondary'], id: 'btn-analysis', href: '/campaigns/' + encodeURIComponent(String(c.id)) + '/analysis' }, 'Analysis'),
            h('a', {
              class: ['btn', 'btn-secondary'],
              id: 'btn-export',
              href: '/api/campaigns/' + encodeURIComponent(String(c.id)) + '/export',
              download: 'campaign-' + String(c.id) + '.jsonl',
              title: 'Finished episodes as JSON Lines: steps, raw outputs, token log-probabilities, verdicts',
            }, 'Export JSONL'))),
        c.error ? h('div', { class: 'callout callout-error', id: 'campaign-error' }, h('strong', null, 'Campaign failed: '), String(c.error)) : null,
        pols.length > 1 ? h('div', { class: 'callout callout-warn', id: 'campaign-mixed-policies' },
          h('strong', null, `Mixed policies: `),
          `its episodes ran under ${pols.length} different policies (workers resolved "${String(c.policy)}" to different models or settings); each exported episode carries the policy that ran it.`) : null,
        h('div', { class: 'summary-grid' },
          h('section', { class: 'panel panel-tight' },
            h('h3', null, 'Progress'),
            progressBar(c, true),
            h('div', { class: 'legend' },
              legend('seg-success', 'success', c.successes),
              legend('seg-finished', 'no success', Math.max(0, (Number(c.counts && c.counts.finished) || 0) - (Number(c.successes) || 0))),
              legend('seg-failed', 'failed', c.counts && c.counts.failed),
              legend('seg-running', 'running', c.counts && c.counts.running),
              legend('seg-pending', 'pending', c.counts && c.counts.pending),
              c.counts && c.counts.cancelled ? legend('seg-cancelled', 'cancelled', c.counts.cancelled) : null),
            h('dl', { class: 'times' },
              dt('Started', timeEl(c.started_at, true)),
              dt('Finished', c.finished_at ? timeEl(c.finished_at, true) : h('span', { class: 'muted' }, ACTIVE.has(st) ? 'in progress' : '—')))),
          h('section', { class: 'panel panel-tight kpis' },
            kpi('Success rate', fmtPct(c.success_rate), 'kpi-success', c.success_rate == null ? 'no finished episodes' : `${fmtInt(c.successes)} of ${fmtInt(c.counts && c.counts.finished)} finished`),
            kpi('Mean score', fmtScore(c.mean_score), 'kpi-score', 'partial credit, 0–1'),
            kpi('Steps', fmtInt(c.steps), 'kpi-steps', 'by finished episodes'),
            Number(c.judge_errors) > 0
              ? kpi('Judge errors', fmtInt(c.judge_errors), 'kpi-judge-errors', 'finished episodes whose rubric could not be evaluated (not scored)')
              : null,
            Number(c.judge_facts) > 0
              ? kpi('Model-judge calls', fmtInt(c.judge_calls), 'kpi-judge',
                `${fmtInt(c.judge_exhaustive_calls)} for an exhaustive judge; ${fmtInt(c.judge_calls_saved)} saved`)
              : null),
          h('section', { class: 'panel panel-tight' },
            h('h3', null, 'Configuration'),
            h('dl', { class: 'config', id: 'campaign-config' },
              dt('Rollouts / task', fmtInt(cfg.rollouts_per_task)),
              dt('Max steps', fmtInt(cfg.max_steps)),
              dt('Seed', cfg.seed == null ? '—' : String(cfg.seed)),
              dt('Concurrency', cfg.concurrency === 0 ? 'auto' : fmtInt(cfg.concurrency)),
              dt('Max attempts', fmtInt(cfg.max_attempts)),
              dt('Answers', cfg.answer_checks > 1 ? `up to ${fmtInt(cfg.answer_checks)}, each but the last re-checked; the last is judged` : 'one (it ends the episode)'),
              dt('Ran under', pols.length === 0 ? h('span', { class: 'muted' }, 'no finished episode yet')
                : h('span', { id: 'campaign-policies' }, pols.map((u) => `${describePolicy(u.card)} (${fmtInt(u.episodes)})`).join('; '))),
              dt('Screen', cfg.screen ? `${describeScreen(cfg.screen)} (tasks with their own: theirs)` : describeScreen(cfg.screen)),
              dt('Tasks', describeTaskFilter(cfg.tasks)),
              dt('Episodes', fmtInt(c.total_episodes))))));
    };

    const renderEpisodes = (data) => {
      const items = data && Array.isArray(data.items) ? data.items : [];
      const total = data && typeof data.total === 'number' ? data.total : items.length;
      if (items.length === 0) {
        const msg = {
          all: 'This campaign has no episodes.',
          successes: 'No successful episodes yet.',
          failures: 'No unsuccessful episodes yet.',
        }[state.filter];
        swap(body, emptyState(msg, state.offset > 0 ? [' ', internal(hrefFor(state.filter, 0), 'Back to the first page')] : null));
        return;
      }
      const head = h('thead', null, h('tr', null,
        th('Task'), th('Site'), th('Roll.', 'num', 'rollout index'), th('Status'), th('End reason'),
        th('Success', 'center'), th('Score', 'num'), th('Steps', 'num'), th('Duration', 'num'),
        th('Att.', 'num', 'attempts'), th('Last error')));
      const rows = items.map((e) => {
        const href = episodeHref(e.id);
        const tr = h('tr', {
          class: ['episode-row', 'row-link', e.success === true ? 'is-success' : e.success === false ? 'is-failure' : null],
          dataset: { id: String(e.id) },
        },
        h('td', { class: 'mono cell-task' }, internal(href, String(e.task_id == null ? '' : e.task_id))),
        h('td', null, String(e.site == null ? '' : e.site)),
        h('td', { class: 'num' }, fmtInt(e.rollout)),
        h('td', { title: e.judge_error ? 'rubric error: ' + String(e.judge_error) : null }, badge(episodeStatus(e))),
        h('td', { class: 'mono small' }, e.end_reason ? String(e.end_reason) : dash()),
        h('td', { class: 'center' }, successMark(e.success)),
        h('td', { class: 'num' }, fmtScore(e.score)),
        h('td', { class: 'num' }, fmtInt(e.step_count)),
        h('td', { class: 'num nowrap' }, fmtMs(e.duration_ms)),
        h('td', { class: ['num', Number(e.attempts) > 1 ? 'num-warn' : null] }, fmtInt(e.attempts)),
        h('td', { class: 'cell-error' }, e.last_error ? h('span', { title: String(e.last_error) }, String(e.last_error)) : dash()));
        rowLink(tr, href);
        return tr;
      });
      swap(body,
        h('div', { class: 'table-wrap' }, h('table', { class: 'table', id: 'episodes' }, head, h('tbody', null, rows))),
        pager(total, state.offset, EPISODE_PAGE, (o) => hrefFor(state.filter, o)));
    };

    renderChips();

    const load = async () => {
      const mine = ++seq;
      const f = FILTERS.find((x) => x.key === state.filter) || FILTERS[0];
      let c;
      let eps;
      let pols = policies;
      try {
        [c, eps] = await Promise.all([
          api(`/api/campaigns/${enc(id)}`),
          api(`/api/episodes?campaign=${enc(id)}${f.q}&limit=${EPISODE_PAGE}&offset=${state.offset}`),
        ]);
        // Grouping a large campaign's episodes by policy is not free: only asked again
        // when more episodes have finished.
        const done = c && c.counts ? c.counts.finished : null;
        if (done !== policiesAt) {
          pols = await api(`/api/campaigns/${enc(id)}/policies`);
          policies = pols;
          policiesAt = done;
        }
      } catch (err) {
        if (!alive(v) || mine !== seq) return;
        if (first || (err instanceof ApiError && err.status === 404)) {
          showBanner(err, 'view', err.status === 404 ? 'Campaign not found' : 'Could not load the campaign');
          if (first) {
            document.title = 'Campaign not found · surfgym';
            swap(header, emptyState('The campaign could not be loaded.'));
            swap(body);
            ready();
          }
          first = false;
          if (err.status !== 404) schedule(v, load, POLL_MS);
          return;
        }
        showBanner(err, 'poll', 'Lost contact with the server');
        schedule(v, load, POLL_MS);
        return;
      }
      if (!alive(v) || mine !== seq) return;
      clearPollBanner();
      campaign = c;
      body.classList.remove('stale');
      // Re-render only what changed, so hover, focus and selection survive the 2 s refresh.
      const hk = JSON.stringify([c, pols]);
      if (hk !== lastHeader) { lastHeader = hk; renderHeader(c, Array.isArray(pols) ? pols : []); renderChips(); }
      const ek = state.filter + '|' + state.offset + '|' + JSON.stringify(eps);
      if (ek !== lastEpisodes) { lastEpisodes = ek; renderEpisodes(eps); }
      const live = ACTIVE.has(c.status);
      setLive(live);
      if (first) ready();
      first = false;
      if (live) watchLive();
      else if (source) { source.close(); source = null; }
    };
    // The policies its episodes ran under, and the finished count they were read at.
    let policies = [];
    let policiesAt;
    // Live campaigns push their progress (server-sent events); polling is the fallback.
    let source = null;
    const watchLive = () => {
      if (source) return;
      if (!window.EventSource) { schedule(v, load, POLL_MS); return; }
      source = new EventSource(`/api/campaigns/${enc(id)}/events`);
      v.cleanups.push(() => { if (source) source.close(); });
      source.addEventListener('campaign', () => { if (alive(v)) load(); });
      source.onerror = () => {
        if (source) { source.close(); source = null; }
        schedule(v, load, POLL_MS);
      };
    };
    await load();
  }

  function legend(cls, label, n) {
    return h('span', { class: 'legend-item' }, h('span', { class: ['swatch', cls] }), label + ' ', h('strong', null, fmtInt(n || 0)));
  }

  function kpi(label, value, id, sub) {
    return h('div', { class: 'kpi', id }, h('span', { class: 'kpi-label' }, label), h('span', { class: 'kpi-value' }, value),
      sub ? h('span', { class: 'kpi-sub' }, sub) : null);
  }

  function dt(label, value) {
    return [h('dt', null, label), h('dd', null, value)];
  }

  // ---------------------------------------------------------------- #/tasks

  async function viewTasks(v, params) {
    setNav('tasks');
    document.title = 'Tasks · surfgym';
    const offset = Math.max(0, parseInt(params.get('offset') || '0', 10) || 0);
    let data;
    try {
      data = await api(`/api/tasks?limit=${TASK_PAGE}&offset=${offset}`);
    } catch (err) {
      if (!alive(v)) return;
      showBanner(err, 'view', 'Could not load tasks');
      swap(app, emptyState('Tasks could not be loaded.'));
      ready();
      return;
    }
    if (!alive(v)) return;
    const items = data && Array.isArray(data.items) ? data.items : [];
    const total = data && typeof data.total === 'number' ? data.total : items.length;
    tasksTotal = total;
    document.getElementById('tasks-count').textContent = fmtInt(total);
    const rows = [];
    for (const t of items) {
      const spec = h('tr', { class: 'task-spec', hidden: true },
        h('td', { colspan: 6 }, h('pre', { class: 'pre' }, JSON.stringify(t.spec, null, 2))));
      const tr = h('tr', { class: 'task-row row-link', dataset: { id: String(t.id) }, title: 'Show the full task' },
        h('td', { class: 'mono cell-task' }, String(t.id == null ? '' : t.id)),
        h('td', null, String(t.site == null ? '' : t.site)),
        h('td', null, badge(t.difficulty)),
        h('td', null, String(t.split == null ? '' : t.split)),
        h('td', { class: 'instruction-cell' }, String(t.instruction == null ? '' : t.instruction),
          Array.isArray(t.tags) && t.tags.length ? h('div', { class: 'tags' }, t.tags.map((g) => h('span', { class: 'tag' }, String(g)))) : null),
        h('td', { class: 'small' }, urlText(t.start_url)));
      tr.addEventListener('click', (e) => {
        if (e.target.closest('a')) return;
        spec.hidden = !spec.hidden;
        tr.classList.toggle('expanded', !spec.hidden);
      });
      rows.push(tr, spec);
    }
    swap(app,
      h('div', { class: 'page-head' },
        h('div', null, h('h1', null, 'Tasks'),
          h('p', { class: 'subtitle' }, `${fmtInt(total)} tasks in the catalogue. Click a row for its full spec and rubric.`))),
      items.length === 0
        ? emptyState(h('strong', null, 'No tasks registered'), ' — ', h('code', null, 'POST /api/tasks'), ' or start ', h('code', null, 'surfgym demo'), ' to load the bundled suite.')
        : [h('div', { class: 'table-wrap' }, h('table', { class: 'table', id: 'tasks' },
          h('thead', null, h('tr', null, th('Task'), th('Site'), th('Difficulty'), th('Split'), th('Instruction'), th('Start URL'))),
          h('tbody', null, rows))),
        pager(total, offset, TASK_PAGE, (o) => '#/tasks?offset=' + o)]);
    ready();
  }

  // ---------------------------------------------------------------- shared with the other files

  // The views and helpers the dashboard's other scripts (replay.js, ...) use; they load
  // after this one and register their views before the first route.
  const views = {};
  window.surfgym = {
    views, POLL_MS, IDLE_POLL_MS, DEFAULT_VIEWPORT, ACTIVE, ApiError,
    h, append, token, api, post, alive, schedule, setLive, ready, setNav, swap, pager, emptyState,
    showBanner, clearPollBanner, internal, enc, campaignHref, episodeHref, blobSrc, urlText, dash,
    fmtInt, fmtPct, fmtScore, fmtMs, timeEl, episodeStatus, badge, successMark, progressBar,
    describePolicy, describeScreen, kpi, stat, th, rowLink,
  };

  // ---------------------------------------------------------------- router

  function parseHash() {
    const raw = (location.hash || '').replace(/^#/, '');
    const q = raw.indexOf('?');
    const path = q >= 0 ? raw.slice(0, q) : raw;
    const params = new URLSearchParams(q >= 0 ? raw.slice(q + 1) : '');
    const parts = path.split('/').filter(Boolean).map((p) => {
      try { return decodeURIComponent(p); } catch (_) { return p; }
    });
    return { parts, params };
  }

  let lastRouteKey = null;

  function route() {
    const { parts, params } = parseHash();
    const key = parts.join('/');
    const v = beginView();
    hideBanner();
    if (key !== lastRouteKey) window.scrollTo(0, 0);
    lastRouteKey = key;
    let p;
    if (parts.length === 0) p = viewCampaigns(v, params);
    else if (parts[0] === 'campaigns' && parts.length === 1) p = viewCampaigns(v, params);
    else if (parts[0] === 'campaigns' && parts.length === 2) p = viewCampaign(v, parts[1], params);
    else if (parts[0] === 'episodes' && parts.length === 2) p = views.episode(v, parts[1], params);
    else if (parts[0] === 'tasks' && parts.length === 1) p = viewTasks(v, params);
    else if (parts[0] === 'triage' && parts.length === 1 && views.triage) p = views.triage(v, params);
    else {
      setNav(null);
      document.title = 'Not found · surfgym';
      swap(app, emptyState(h('strong', null, 'No such page. '), internal('#/', 'Go to the campaigns list.')));
      showBanner(new ApiError(404, 'not_found', `There is no dashboard page at “#/${key}”.`), 'view', 'Page not found');
      ready();
      return;
    }
    const isList = parts.length === 0 || (parts[0] === 'campaigns' && parts.length === 1);
    if (!isList && tasksTotal == null) loadTasksTotal();
    Promise.resolve(p).catch((err) => {
      if (!alive(v)) return;
      console.error(err);
      showBanner(err, 'view', 'The dashboard hit an unexpected error');
      ready();
    });
  }

  window.addEventListener('hashchange', route);
  document.addEventListener('visibilitychange', () => {
    // Refresh promptly when a hidden tab comes back, instead of waiting for the next tick.
    if (!document.hidden && current && current.timer && current.pending) {
      const fn = current.pending;
      clearTimeout(current.timer);
      current.timer = null;
      current.pending = null;
      fn();
    }
  });
  // After every script of the page has run and registered its views.
  document.addEventListener('DOMContentLoaded', route);
})();
