// surfgym dashboard — the episode replay (#/episodes/{id}): step list, slider, screenshot
// with click marker and numbered element boxes, the step's details (its policy call:
// replay-policy.js; its accessibility view: replay-a11y.js), verdicts. Keys: ← → steps,
// Home / End first and final, e element boxes.
//
// Loaded after app.js, whose shared helpers it takes from `window.surfgym`; registers
// itself as the `episode` view. Everything from the API is inserted as text.
'use strict';

(function () {
  const SG = window.surfgym;
  const {
    POLL_MS, DEFAULT_VIEWPORT, h, append, api, alive, schedule, setLive,
    ready, setNav, swap, emptyState, showBanner, clearPollBanner, internal, enc,
    campaignHref, blobSrc, urlText, dash, fmtInt, fmtScore, fmtMs, timeEl,
    episodeStatus, badge, successMark, describePolicy, describeScreen, kpi, th,
  } = SG;
  const app = document.getElementById('app');

  async function viewEpisode(v, id, params) {
    setNav('campaigns');
    document.title = 'Episode · surfgym';
    let ep;
    try {
      ep = await api(`/api/episodes/${enc(id)}`);
    } catch (err) {
      if (!alive(v)) return;
      showBanner(err, 'view', err.status === 404 ? 'Episode not found' : 'Could not load the episode');
      document.title = 'Episode not found · surfgym';
      swap(app, h('nav', { class: 'crumbs' }, internal('#/', 'Campaigns')), emptyState('The episode could not be loaded.'));
      ready();
      return;
    }
    if (!alive(v)) return;
    renderEpisode(v, ep, params);
    ready();

    // Fill in the campaign name in the breadcrumb (best effort).
    api(`/api/campaigns/${enc(ep.campaign_id)}`).then((c) => {
      if (!alive(v) || !c) return;
      const el = document.getElementById('crumb-campaign');
      if (el) el.textContent = String(c.name == null ? '' : c.name);
    }).catch(() => {});

    // While the episode is still pending or running, check back until it ends.
    if (ep.status === 'pending' || ep.status === 'running') {
      setLive(true);
      const poll = async () => {
        try {
          const next = await api(`/api/episodes/${enc(id)}`);
          if (!alive(v)) return;
          clearPollBanner();
          if (next.status !== ep.status || (next.steps || []).length !== (ep.steps || []).length) {
            ep = next;
            const sel = new URLSearchParams((location.hash.split('?')[1]) || '');
            renderEpisode(v, ep, sel);
          }
          if (ep.status === 'pending' || ep.status === 'running') schedule(v, poll, POLL_MS);
          else setLive(false);
        } catch (err) {
          if (!alive(v)) return;
          showBanner(err, 'poll', 'Lost contact with the server');
          schedule(v, poll, POLL_MS);
        }
      };
      schedule(v, poll, POLL_MS);
    }
  }

  let showElements = false;

  function renderEpisode(v, ep, params) {
    const steps = Array.isArray(ep.steps) ? ep.steps : [];
    const verdicts = Array.isArray(ep.verdicts) ? ep.verdicts : [];
    const finalIdx = steps.length; // the pseudo-step
    const taskId = String(ep.task_id == null ? '' : ep.task_id);
    document.title = `${taskId} #${ep.rollout} · Episode · surfgym`;

    if (params.get('elements') === '1') showElements = true;
    let sel = 0;
    const sp = params.get('step');
    if (sp === 'final') sel = finalIdx;
    else if (sp != null && /^\d+$/.test(sp)) sel = Math.min(finalIdx, parseInt(sp, 10));
    else if (steps.length === 0) sel = finalIdx;

    // ---- header
    const passed = verdicts.filter((x) => x.passed === true).length;
    const checked = verdicts.filter((x) => x.passed != null).length;
    const unchecked = verdicts.length - checked;
    const outcome = h('div', { class: 'outcome', id: 'outcome' },
      kpi('Outcome', ep.success === true ? '✓ success' : ep.success === false ? '✗ failure' : ep.judge_error ? '⚠ judge error' : String(ep.status || '—'), 'outcome-success'),
      ep.score_of_verified == null
        ? kpi('Score', fmtScore(ep.score), 'outcome-score')
        : kpi('Score', `≥ ${fmtScore(ep.score)}`, 'outcome-score',
          `lower bound: judging stopped early; ${fmtScore(ep.score_of_verified)} over the verified facts`),
      kpi('End reason', ep.end_reason ? String(ep.end_reason) : '—', 'outcome-end'),
      kpi('Steps', fmtInt(ep.step_count != null ? ep.step_count : steps.length), 'outcome-steps'),
      kpi('Duration', fmtMs(ep.duration_ms), 'outcome-duration'),
      kpi('Facts', verdicts.length ? `${passed} / ${checked}` : '—', 'outcome-facts',
        unchecked ? `${unchecked} not checked (stopped early)` : undefined),
      h('div', { class: 'kpi kpi-answer', id: 'outcome-answer' },
        h('span', { class: 'kpi-label' }, 'Final answer'),
        ep.final_answer != null && ep.final_answer !== ''
          ? h('pre', { id: 'final-answer', class: 'answer' }, String(ep.final_answer))
          : h('span', { id: 'final-answer', class: 'muted' }, 'No answer given.')));
    outcome.firstChild.classList.add(ep.success === true ? 'kpi-ok' : ep.success === false ? 'kpi-fail' : 'kpi-neutral');

    const header = [
      h('nav', { class: 'crumbs' },
        internal('#/', 'Campaigns'), h('span', { class: 'sep' }, '/'),
        internal(campaignHref(ep.campaign_id), h('span', { id: 'crumb-campaign' }, 'campaign')),
        h('span', { class: 'sep' }, '/'), h('span', { class: 'mono' }, `${taskId} #${ep.rollout}`)),
      h('div', { class: 'page-head' },
        h('div', { class: 'head-main' },
          h('h1', null, h('span', { class: 'mono' }, taskId), ' ', h('span', { class: 'muted' }, '#' + ep.rollout), ' ', badge(episodeStatus(ep))),
          h('p', { class: 'subtitle' },
            'site ', h('strong', null, String(ep.site == null ? '' : ep.site)),
            h('span', { class: 'sep' }, '·'), 'seed ', h('span', { class: 'mono' }, String(ep.seed)),
            h('span', { class: 'sep' }, '·'), 'attempts ', String(ep.attempts),
            ep.screen ? [h('span', { class: 'sep' }, '·'), 'screen ', h('span', { id: 'episode-screen' }, describeScreen(ep.screen))] : null,
            ep.policy ? [h('span', { class: 'sep' }, '·'), 'policy ', h('span', { id: 'episode-policy', title: JSON.stringify(ep.policy, null, 1) }, describePolicy(ep.policy))] : null,
            ep.started_at ? [h('span', { class: 'sep' }, '·'), 'started ', timeEl(ep.started_at, true)] : null,
            h('span', { class: 'sep' }, '·'), h('span', { class: 'mono muted id-text', title: 'episode id' }, String(ep.id))))),
      h('section', { class: 'panel instruction-panel' },
        h('h3', null, 'Task instruction'),
        h('p', { id: 'instruction', class: 'instruction' }, String(ep.instruction == null ? '' : ep.instruction))),
      outcome,
      ep.judge_error ? h('div', { class: 'callout callout-error', id: 'judge-error' },
        h('strong', null, 'Rubric error (not scored): '), h('span', { class: 'mono' }, String(ep.judge_error)),
        ' — the task\'s rubric could not be evaluated on this page; this episode counts neither as a success nor as a failure.') : null,
      ep.last_error ? h('div', { class: 'callout callout-error' }, h('strong', null, 'Last infrastructure error: '), h('span', { class: 'mono' }, String(ep.last_error))) : null,
    ];

    // ---- replay
    const stepList = h('ol', { id: 'steps', class: 'steps' });
    const stepItems = steps.map((s, i) => {
      const li = h('li', { class: ['step', s.action_error ? 'has-error' : null], dataset: { idx: String(i) } },
        h('button', { type: 'button', class: 'step-btn', title: String(s.action == null ? '' : s.action), onclick: () => select(i) },
          h('span', { class: 'step-idx' }, String(s.idx != null ? s.idx : i)),
          h('span', { class: 'step-action mono' }, String(s.action == null ? '' : s.action)),
          s.action_error ? h('span', { class: 'step-err', title: String(s.action_error) }, '!') : null));
      return li;
    });
    const finalItem = h('li', { class: 'final-step', dataset: { idx: 'final' } },
      h('button', { type: 'button', class: 'step-btn', onclick: () => select(finalIdx) },
        h('span', { class: 'step-idx' }, '■'),
        h('span', { class: 'step-action' }, 'final page')));
    append(stepList, [stepItems, finalItem]);

    const slider = h('input', {
      type: 'range', id: 'step-slider', min: 0, max: finalIdx, step: 1, value: sel, 'aria-label': 'Step',
    });
    slider.addEventListener('input', () => select(parseInt(slider.value, 10)));
    const counter = h('span', { id: 'step-counter', class: 'step-counter mono' });
    const prevBtn = h('button', { type: 'button', class: 'btn btn-small', id: 'step-prev', title: 'Previous step (←)', onclick: () => select(sel - 1) }, '←');
    const nextBtn = h('button', { type: 'button', class: 'btn btn-small', id: 'step-next', title: 'Next step (→)', onclick: () => select(sel + 1) }, '→');
    const elToggle = h('input', { type: 'checkbox', id: 'toggle-elements' });
    elToggle.checked = showElements;
    elToggle.addEventListener('change', () => { showElements = elToggle.checked; select(sel); });

    const shot = h('img', { id: 'shot', class: 'shot', alt: 'Screenshot of the page at the selected step' });
    const shotMsg = h('div', { class: 'shot-msg', hidden: true });
    const overlay = h('div', { class: 'overlay', id: 'overlay' });
    shot.addEventListener('error', () => {
      shotMsg.textContent = 'Screenshot could not be loaded (the blob is missing on the server).';
      shotMsg.hidden = false;
      shot.classList.add('broken');
    });
    shot.addEventListener('load', () => { shotMsg.hidden = true; shot.classList.remove('broken'); });
    // Element boxes and clicks are in the page's CSS pixels; the screenshot may be scaled.
    const screen = ep.screen && Number(ep.screen.width) > 0 && Number(ep.screen.height) > 0 ? ep.screen : DEFAULT_VIEWPORT;
    const VIEWPORT_W = Number(screen.width);
    const VIEWPORT_H = Number(screen.height);
    const stage = h('div', { class: 'shot-wrap', id: 'shot-wrap', style: { aspectRatio: `${VIEWPORT_W} / ${VIEWPORT_H}` } }, shot, overlay, shotMsg);
    const details = h('div', { class: 'step-details', id: 'step-details' });

    const replay = h('section', { class: 'panel replay' },
      h('div', { class: 'panel-head' },
        h('h2', null, 'Replay'),
        h('div', { class: 'replay-controls' },
          prevBtn, slider, nextBtn, counter,
          h('label', { class: 'toggle', for: 'toggle-elements' }, elToggle, ' show elements'))),
      h('div', { class: 'replay-grid' },
        h('div', { class: 'steps-col' }, stepList,
          h('p', { class: 'hint muted' }, 'Keys: ← → steps, Home / End first and final, e element numbers.')),
        h('div', { class: 'stage-col' }, stage), details));

    // ---- verdicts
    // passed null: binary judging settled the label before this fact was looked at.
    const vrows = verdicts.map((x) => h('tr', { class: ['verdict', x.passed == null ? 'unchecked' : x.passed ? 'pass' : 'fail'] },
      h('td', { class: 'mono small' }, String(x.group_id == null ? '' : x.group_id)),
      h('td', { class: 'mono small' }, String(x.fact_id == null ? '' : x.fact_id)),
      h('td', null, x.description != null ? String(x.description) : dash()),
      h('td', { class: 'center' }, x.passed == null
        ? h('span', { class: 'muted small unchecked-mark', title: 'the success label was settled without this fact' }, 'not checked (stopped early)')
        : successMark(!!x.passed)),
      h('td', { class: 'evidence' }, x.evidence ? h('span', { class: 'mono small' }, String(x.evidence)) : dash()),
      h('td', null, x.reason ? String(x.reason) : dash()),
      h('td', { class: 'muted small' }, String(x.judge == null ? '' : x.judge))));
    const verdictTable = h('table', { class: 'table verdicts', id: 'verdicts' },
      h('thead', null, h('tr', null, th('Group'), th('Fact'), th('Description'), th('Passed', 'center'),
        th('Evidence'), th('Reason'), th('Judge'))),
      h('tbody', null, vrows.length ? vrows
        : h('tr', { class: 'empty-row' }, h('td', { colspan: 7, class: 'muted' },
          ep.status === 'finished' ? 'No verdicts recorded.' : 'Not judged yet — the episode has not finished.'))));
    const verdictPanel = h('section', { class: 'panel' },
      h('div', { class: 'panel-head' }, h('h2', null, 'Judge verdicts'),
        verdicts.length ? h('span', { class: 'muted' }, `${passed} of ${checked} checked facts hold`
          + (unchecked ? `, ${unchecked} not checked (stopped early)` : '')) : null),
      h('div', { class: 'table-wrap' }, verdictTable));

    if (steps.length === 0 && !ep.final_screenshot) {
      // Nothing to replay (not run yet, or it failed before its first observation).
      const why = ep.status === 'pending' || ep.status === 'running'
        ? `This episode is ${ep.status}; its replay appears here when it finishes (this page refreshes itself).`
        : 'This episode recorded no steps and no final page.';
      swap(app, header,
        h('section', { class: 'panel replay' },
          h('div', { class: 'panel-head' }, h('h2', null, 'Replay')),
          h('ol', { id: 'steps', class: 'steps', hidden: true }),
          emptyState(why)),
        verdictPanel);
      return;
    }
    swap(app, header, replay, verdictPanel);

    // ---- selection
    function select(i) {
      if (!alive(v)) return;
      i = Math.max(0, Math.min(finalIdx, Number.isFinite(i) ? i : 0));
      sel = i;
      slider.value = String(i);
      prevBtn.disabled = i === 0;
      nextBtn.disabled = i === finalIdx;
      counter.textContent = i === finalIdx ? `final / ${steps.length}` : `${i + 1} / ${steps.length}`;
      for (const [j, li] of stepItems.entries()) {
        li.classList.toggle('selected', j === i);
        if (j === i) li.setAttribute('aria-current', 'step'); else li.removeAttribute('aria-current');
      }
      finalItem.classList.toggle('selected', i === finalIdx);
      const cur = stepItems[i] || finalItem;
      scrollIntoList(stepList, cur);

      const isFinal = i === finalIdx;
      const s = isFinal ? null : steps[i];
      const hash = isFinal ? ep.final_screenshot : s.screenshot;
      if (hash) {
        const src = blobSrc(hash);
        if (shot.getAttribute('src') !== src) {
          shot.classList.remove('broken');
          shotMsg.hidden = true;
          shot.setAttribute('src', src);
        }
        shot.hidden = false;
      } else {
        shot.removeAttribute('src');
        shot.hidden = true;
        shot.classList.remove('broken');
        shotMsg.textContent = isFinal ? 'No final screenshot was recorded.' : 'No screenshot for this step.';
        shotMsg.hidden = false;
      }
      stage.classList.toggle('no-shot', !hash);

      // overlay: click marker and element boxes
      const layers = [];
      if (s && showElements && Array.isArray(s.elements)) {
        for (const el of s.elements) {
          const b = el && el.bbox;
          if (!b || el.in_viewport === false) continue;
          const x = Number(b.x); const y = Number(b.y); const w = Number(b.width); const hh = Number(b.height);
          if (![x, y, w, hh].every(Number.isFinite) || w <= 0 || hh <= 0) continue;
          if (x >= VIEWPORT_W || y >= VIEWPORT_H || x + w <= 0 || y + hh <= 0) continue;
          layers.push(h('div', {
            class: 'el-box',
            dataset: { id: String(el.id) },
            title: `[${el.id}] ${el.role || el.tag || ''} ${JSON.stringify(String(el.label == null ? '' : el.label))}`,
            style: {
              left: (x / VIEWPORT_W) * 100 + '%', top: (y / VIEWPORT_H) * 100 + '%',
              width: (w / VIEWPORT_W) * 100 + '%', height: (hh / VIEWPORT_H) * 100 + '%',
            },
          }, h('span', { class: 'el-num' }, String(el.id))));
        }
      }
      if (s && s.click_x != null && s.click_y != null && Number.isFinite(Number(s.click_x)) && Number.isFinite(Number(s.click_y))) {
        layers.push(h('div', {
          id: 'click-marker',
          class: 'click-marker',
          title: `click at (${Math.round(s.click_x)}, ${Math.round(s.click_y)})`,
          style: { left: (Number(s.click_x) / VIEWPORT_W) * 100 + '%', top: (Number(s.click_y) / VIEWPORT_H) * 100 + '%' },
        }, h('span', { class: 'click-ring' }), h('span', { class: 'click-dot' })));
      }
      overlay.replaceChildren(...layers);

      // details
      if (isFinal) {
        details.replaceChildren(
          field('Action', h('code', { id: 'action', class: 'action' }, 'final page' + (ep.end_reason ? ` — episode ended: ${ep.end_reason}` : ''))),
          ep.final_answer != null && ep.final_answer !== '' ? field('Answer', h('pre', { class: 'pre' }, String(ep.final_answer))) : null,
          field('URL', urlText(ep.final_url)));
      } else {
        const timing = [['observe', s.observe_ms], ['policy', s.policy_ms], ['act', s.act_ms]];
        const totalMs = timing.reduce((a, [, ms]) => a + (Number(ms) || 0), 0);
        details.replaceChildren();
        append(details, [
          field('Action', h('code', { id: 'action', class: ['action', s.action_error ? 'action-failed' : null] }, String(s.action == null ? '' : s.action)),
            s.click_x != null && s.click_y != null ? h('span', { class: 'muted small click-coords' }, ` at (${Math.round(s.click_x)}, ${Math.round(s.click_y)})`) : null),
          s.action_error ? field('Error', h('div', { class: 'callout callout-error', id: 'action-error' }, String(s.action_error))) : null,
          field('Thought', s.thought != null && s.thought !== '' ? h('p', { class: 'thought', id: 'thought' }, String(s.thought)) : h('span', { class: 'muted' }, 'No thought recorded.')),
          field('URL', urlText(s.url)),
          field('Title', s.title ? h('span', { id: 'page-title' }, String(s.title)) : dash()),
          Array.isArray(s.events) && s.events.length ? field('Page events', h('ul', { class: 'events', id: 'page-events' },
            s.events.map((e) => h('li', { class: ['event', 'event-' + String(e.kind || '')] }, eventText(e))))) : null,
          Array.isArray(s.tabs) && s.tabs.length > 1 ? field('Tabs', h('ol', { class: 'tabs', id: 'tabs' },
            s.tabs.map((t) => h('li', { class: t.active ? 'tab-active' : null, title: String(t.url || '') },
              String(t.title || t.url || '(blank)') + (t.active ? ' (active)' : ''))))) : null,
          field('Timings', h('div', { class: 'timings', id: 'timings' },
            timing.map(([k, ms]) => h('span', { class: 'timing' }, h('span', { class: ['swatch', 'timing-' + k] }), `${k} `, h('strong', null, fmtMs(ms)))),
            h('span', { class: 'muted' }, ` = ${fmtMs(totalMs)}`),
            h('div', { class: 'timing-bar' }, timing.map(([k, ms]) =>
              h('span', { class: 'timing-' + k, style: { width: (totalMs > 0 ? ((Number(ms) || 0) / totalMs) * 100 : 0) + '%' } }))))),
          s.logprob != null ? field('Log-prob', h('span', { class: 'mono' }, Number(s.logprob).toFixed(3))) : null,
          field('Policy call', SG.replay.policyCall(s, steps, i)),
          field('Accessibility', h('details', { class: 'raw', open: true, id: 'a11y-details' },
            h('summary', null, SG.replay.a11ySummary(s)),
            SG.replay.a11yTree(s, overlay))),
        ]);
      }

      // deep link, without triggering a route
      const q = [];
      if (isFinal) q.push('step=final'); else if (i > 0) q.push('step=' + i);
      if (showElements) q.push('elements=1');
      const hs = '#/episodes/' + enc(ep.id) + (q.length ? '?' + q.join('&') : '');
      if (location.hash !== hs) history.replaceState(null, '', hs);

      // warm the neighbours
      for (const j of [i + 1, i - 1]) {
        const hh = j === finalIdx ? ep.final_screenshot : steps[j] && steps[j].screenshot;
        if (hh) { const im = new Image(); im.src = blobSrc(hh); }
      }
    }

    // ← → previous/next step, Home/End first step/final page, e the element boxes.
    const KEYS = { ArrowLeft: () => sel - 1, ArrowRight: () => sel + 1, Home: () => 0, End: () => finalIdx };
    const onKey = (e) => {
      if (e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey) return;
      if (!KEYS[e.key] && e.key !== 'e') return;
      const t = e.target;
      if (t === slider) return; // the slider moves itself and fires 'input'
      if (t && (t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' || t.isContentEditable ||
        (t.tagName === 'INPUT' && t.type !== 'checkbox' && t.type !== 'range'))) return;
      e.preventDefault();
      if (e.key === 'e') {
        elToggle.checked = !elToggle.checked;
        showElements = elToggle.checked;
        select(sel);
        return;
      }
      select(KEYS[e.key]());
    };
    if (v.onKey) document.removeEventListener('keydown', v.onKey);
    v.onKey = onKey;
    document.addEventListener('keydown', onKey);
    v.cleanups.push(() => document.removeEventListener('keydown', onKey));

    select(sel);
  }

  function field(label, ...value) {
    return h('div', { class: 'field' }, h('div', { class: 'field-label' }, label), h('div', { class: 'field-value' }, ...value));
  }

  // One page event in words; unknown kinds (from newer servers) still show their fields.
function eventText(e) {
  switch (e && e.kind) {
    case 'dialog': return `${e.dialog} dialog ${e.accepted ? 'accepted' : 'dismissed'}: "${e.message}"` + (e.count > 1 ? ` ×${e.count}` : '');
    case 'tab_opened': return `opened tab ${e.tab}: ${e.url}`;
    case 'tab_closed': return `closed tab ${e.tab}`;
    case 'download': return `download refused: ${e.filename} (${e.url})`;
    case 'blocked': return `blocked ${e.url}: ${e.reason}`;
    case 'script_stopped': return `stopped a runaway script (during ${e.during})`;
    case 'navigation_stopped': return `stopped loading ${e.url}: no answer after ${(Number(e.after_ms) / 1000).toFixed(1)} s`;
    default: return JSON.stringify(e);
  }
}

  function scrollIntoList(list, item) {
    const col = list.parentElement;
    if (!col || !item) return;
    const top = item.offsetTop - col.offsetTop;
    const bottom = top + item.offsetHeight;
    if (top < col.scrollTop) col.scrollTop = top - 4;
    else if (bottom > col.scrollTop + col.clientHeight) col.scrollTop = bottom - col.clientHeight + 4;
  }

  SG.views.episode = viewEpisode;
})();
