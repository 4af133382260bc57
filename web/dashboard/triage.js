// surfgym dashboard — failure triage (#/triage, #/triage?campaign={id}): what went wrong
// across a campaign's episodes, or every campaign's, as `GET /api/triage` groups it (in
// SQL, on the server): end reasons, infrastructure errors, rubric errors, page events by
// site, and the rubric facts that fail most, each group with example episodes.
//
// Rows are focusable (↑ ↓ move, Enter opens the first example: keys.js). Everything from
// pages, tasks and models is inserted as text.
'use strict';

(function () {
  const SG = window.surfgym;
  const {
    h, api, alive, schedule, setLive, ready, setNav, swap, emptyState, showBanner, clearPollBanner,
    internal, enc, campaignHref, episodeHref, dash, fmtInt, fmtPct, stat, th, POLL_MS, ACTIVE,
  } = SG;
  const app = document.getElementById('app');

  // What each page-event kind means, in the words the replay uses.
  const EVENT_KINDS = {
    dialog: 'dialogs answered',
    blocked: 'navigations blocked',
    download: 'downloads refused',
    script_stopped: 'runaway scripts stopped',
    navigation_stopped: 'navigations stopped (no answer)',
    tab_opened: 'tabs opened',
    tab_closed: 'tabs closed',
  };

  function examples(ids) {
    const list = Array.isArray(ids) ? ids : [];
    if (list.length === 0) return dash();
    return h('span', { class: 'examples' }, list.map((id, j) => {
      const a = internal(episodeHref(id), String(id).slice(0, 8));
      a.className = 'example-link mono small';
      a.title = 'episode ' + String(id);
      return [j ? ' ' : null, a];
    }));
  }

  function num(n, cls) {
    return h('td', { class: ['num', cls] }, fmtInt(n));
  }

  // A table whose rows are focusable; `cols` are [header, class, title], `row` makes the
  // cells of one item.
  function table(id, cols, items, row, empty) {
    if (!items.length) return emptyState(empty);
    return h('div', { class: 'table-wrap' }, h('table', { class: 'table triage-table', id },
      h('thead', null, h('tr', null, cols.map(([t, c, title]) => th(t, c, title)))),
      h('tbody', null, items.map((it) => {
        const cells = row(it);
        // The group's key (its leading cells), so a refresh keeps the focused row.
        const key = cells.slice(0, 2).map((c) => c.title || c.textContent).join(' ');
        return h('tr', { class: 'triage-row', tabindex: 0, dataset: { id: key } }, cells);
      }))));
  }

  function section(id, title, sub, body, cut) {
    return h('section', { class: 'panel', id },
      h('div', { class: 'panel-head' }, h('h2', null, title), sub ? h('span', { class: 'muted' }, sub) : null),
      body,
      cut ? h('p', { class: 'muted small' }, 'Only the largest groups are shown.') : null);
  }

  function render(t, campaign, body) {
    const tot = t.totals || {};
    const limit = Number(t.group_limit) || 50;
    const list = (x) => (Array.isArray(x) ? x : []);
    const errCols = [['Kind'], ['Episodes', 'num'], ['Given up', 'num', 'failed: the runner gave up'],
      ['Finished', 'num', 'finished after all'], ['Newest message'], ['Examples']];
    const errRow = (g) => [
      h('td', { class: 'mono small c-kind' }, String(g.kind == null ? '' : g.kind)),
      num(g.episodes, 'c-episodes'), num(g.gave_up, 'c-gave-up'), num(g.finished, 'c-finished'),
      h('td', { class: 'cell-error small' }, h('span', { title: String(g.sample || '') }, String(g.sample || ''))),
      h('td', null, examples(g.examples))];
    swap(body,
      h('div', { class: 'stats', id: 'triage-stats' },
        stat('Episodes', fmtInt(tot.episodes), 'triage-episodes'),
        stat('Finished', fmtInt(tot.finished), 'triage-finished', `${fmtInt(tot.successes)} successful`),
        stat('Failed', fmtInt(tot.failed), 'triage-failed', 'given up (infrastructure)'),
        stat('Infrastructure errors', fmtInt(tot.infra_errors), 'triage-infra', 'episodes with one recorded'),
        stat('Rubric errors', fmtInt(tot.judge_errors), 'triage-judge-errors', 'finished, not scored')),
      section('triage-end-reasons', 'End reasons', 'finished episodes, by how they ended',
        table('end-reasons', [['End reason'], ['Episodes', 'num'], ['Successes', 'num'], ['Failures', 'num'],
          ['Rubric errors', 'num'], ['Success rate', 'num'], ['Examples', null, 'unsuccessful first']],
        list(t.end_reasons), (g) => [
          h('td', { class: 'mono c-key' }, String(g.end_reason == null ? '' : g.end_reason)),
          num(g.episodes, 'c-episodes'), num(g.successes, 'c-successes'), num(g.failures, 'c-failures'),
          num(g.judge_errors, 'c-judge-errors'),
          h('td', { class: 'num' }, fmtPct(Number(g.episodes) - Number(g.judge_errors) > 0
            ? Number(g.successes) / (Number(g.episodes) - Number(g.judge_errors)) : null)),
          h('td', null, examples(g.examples))], 'No finished episodes yet.'),
        list(t.end_reasons).length >= limit),
      section('triage-infra', 'Infrastructure failures', 'episodes with an infrastructure error, by the part that failed',
        table('infra-failures', errCols, list(t.infra_failures), errRow, 'No infrastructure errors.'),
        list(t.infra_failures).length >= limit),
      list(t.blocked).length ? section('triage-blocked', 'Blocked pages by site', 'pages of the task\'s site that turned the agent away (CAPTCHA, bot or login wall, 403, 429): retried, never scored',
        table('blocked', errCols, list(t.blocked), errRow, ''), list(t.blocked).length >= limit) : null,
      list(t.judge_errors).length ? section('triage-rubric', 'Rubric errors', 'rubrics the page could not evaluate (not scored)',
        table('judge-errors', errCols, list(t.judge_errors), errRow, ''), list(t.judge_errors).length >= limit) : null,
      section('triage-events', 'Page events by site', 'what pages did on their own: dialogs, blocked navigations, downloads, stopped scripts',
        table('page-events', [['Site'], ['Event'], ['Events', 'num'], ['Steps', 'num'], ['Episodes', 'num'], ['Example'], ['Examples']],
          list(t.page_events), (g) => [
            h('td', { class: 'c-site' }, String(g.site == null ? '' : g.site)),
            h('td', { class: 'c-kind', title: String(g.kind || '') }, EVENT_KINDS[g.kind] || String(g.kind == null ? '' : g.kind)),
            num(g.events, 'c-events'), num(g.steps, 'c-steps'), num(g.episodes, 'c-episodes'),
            h('td', { class: 'cell-error small' }, g.sample != null ? h('span', { title: String(g.sample) }, String(g.sample)) : dash()),
            h('td', null, examples(g.examples))], 'No page events recorded.'),
        list(t.page_events).length >= limit),
      section('triage-facts', 'Facts that fail most', 'judge verdicts by rubric fact, most failed first',
        table('failing-facts', [['Task'], ['Fact'], ['Description'], ['Failed', 'num'], ['Passed', 'num'],
          ['Not checked', 'num', 'binary judging stopped early'], ['Fails', 'num', 'failed / checked'], ['Examples']],
        list(t.facts), (g) => [
          h('td', { class: 'mono small c-task' }, String(g.task_id == null ? '' : g.task_id)),
          h('td', { class: 'mono small c-fact' }, String(g.fact_id == null ? '' : g.fact_id)),
          h('td', { class: 'c-description' }, g.description != null ? String(g.description) : dash()),
          num(g.failed, 'c-failed'), num(g.passed, 'c-passed'), num(g.unchecked, 'c-unchecked'),
          h('td', { class: 'num' }, fmtPct(Number(g.failed) + Number(g.passed) > 0 ? Number(g.failed) / (Number(g.failed) + Number(g.passed)) : null)),
          h('td', null, examples(g.examples))], 'No fact has failed.'),
        list(t.facts).length >= limit));
    return campaign;
  }

  async function viewTriage(v, params) {
    setNav('triage');
    const id = params.get('campaign');
    document.title = 'Triage · surfgym';
    const body = h('div', { id: 'triage-body' });
    const name = h('span', { id: 'triage-scope' }, id ? 'campaign' : 'every campaign');
    const crumb = h('span', { id: 'triage-crumb' }, 'campaign');
    swap(app,
      h('nav', { class: 'crumbs' }, internal('#/', 'Campaigns'), h('span', { class: 'sep' }, '/'),
        id ? [internal(campaignHref(id), crumb), h('span', { class: 'sep' }, '/')] : null, 'Triage'),
      h('div', { class: 'page-head' }, h('div', null,
        h('h1', null, 'Failure triage'),
        h('p', { class: 'subtitle' }, 'What went wrong in ', id ? name : 'every campaign',
          ', grouped; each group links to example episodes.'))),
      body);
    let first = true;
    let lastKey = null;
    const load = async () => {
      let t;
      let c = null;
      try {
        [t, c] = await Promise.all([
          api('/api/triage' + (id ? '?campaign=' + enc(id) : '')),
          id ? api('/api/campaigns/' + enc(id)) : Promise.resolve(null),
        ]);
      } catch (err) {
        if (!alive(v)) return;
        showBanner(err, first ? 'view' : 'poll', first ? 'Could not load the triage' : 'Lost contact with the server');
        if (first) { swap(body, emptyState('The triage could not be loaded.')); ready(); }
        first = false;
        if (!(err.status >= 400 && err.status < 500)) schedule(v, load, POLL_MS);
        return;
      }
      if (!alive(v)) return;
      clearPollBanner();
      if (c) {
        name.textContent = String(c.name == null ? '' : c.name);
        crumb.textContent = name.textContent;
        document.title = `Triage · ${name.textContent} · surfgym`;
      }
      const key = JSON.stringify(t);
      if (key !== lastKey) { lastKey = key; render(t, c, body); }
      // A campaign still running changes its triage: refresh while it does.
      const live = c ? ACTIVE.has(c.status) : false;
      setLive(live);
      if (first) ready();
      first = false;
      if (live) schedule(v, load, POLL_MS);
    };
    await load();
  }

  SG.views.triage = viewTriage;
})();
