// surfgym dashboard — the replay's view of one policy call: the prompt the model was given
// with its images where the template put them, the raw output, and the log-probability of
// each generated token (as stored: token ids, the tokenizer is not in the browser).
//
// The prompt's image placeholders stand for the screenshots the policy kept, the current
// one last; each is shown as the stored screenshot of its step (the policy saw it with
// set-of-marks drawn when its grounding was marks). Everything from the model is inserted
// as text.
'use strict';

(function () {
  const SG = window.surfgym;
  const { h, blobSrc } = SG;

  // Idefics3 / SmolVLM write `<image>`; Qwen2-VL a vision block around its pad token.
  const PLACEHOLDER = /<\|vision_start\|>(?:<\|image_pad\|>)*<\|vision_end\|>|<image>/g;

  // The prompt as text runs and image slots; slot k of n is step (idx - (n - 1 - k)).
  function promptParts(prompt) {
    const parts = [];
    let last = 0;
    for (const m of prompt.matchAll(PLACEHOLDER)) {
      if (m.index > last) parts.push({ text: prompt.slice(last, m.index) });
      parts.push({ image: m[0] });
      last = m.index + m[0].length;
    }
    if (last < prompt.length) parts.push({ text: prompt.slice(last) });
    return parts;
  }

  function promptView(step, steps, i) {
    const parts = promptParts(String(step.prompt));
    const images = parts.filter((p) => p.image).length;
    let k = 0;
    return h('div', { class: 'prompt', id: 'step-prompt' }, parts.map((p) => {
      if (p.text != null) return h('span', { class: 'prompt-text' }, p.text);
      const j = i - (images - 1 - k);
      k += 1;
      const shot = j >= 0 && steps[j] ? steps[j].screenshot : null;
      const label = j === i ? 'this step\'s screenshot' : `screenshot of step ${j + 1}`;
      return h('figure', { class: 'prompt-image', dataset: { step: String(j) } },
        shot ? h('img', { src: blobSrc(shot), alt: `Image given to the model: ${label}`, loading: 'lazy' })
          : h('span', { class: 'muted' }, '(no screenshot stored)'),
        h('figcaption', { class: 'muted small' }, `${p.image} — ${label}`));
    }));
  }

  // Green for likely tokens, red for unlikely: the sampled token's own probability.
  function tokenColor(lp) {
    const p = Math.max(0, Math.min(1, Math.exp(lp)));
    return `hsl(${Math.round(p * 120)}, 70%, 88%)`;
  }

  function tokensView(step) {
    const lps = Array.isArray(step.token_logprobs) ? step.token_logprobs : [];
    const ids = Array.isArray(step.token_ids) ? step.token_ids : [];
    if (lps.length === 0) return null;
    const sum = lps.reduce((a, x) => a + (Number(x) || 0), 0);
    const lowest = lps.reduce((m, x, j) => (Number(x) < Number(lps[m]) ? j : m), 0);
    return h('div', { class: 'tokens', id: 'step-tokens' },
      h('p', { class: 'small' }, `${lps.length} tokens · sum of log-probabilities ${sum.toFixed(3)} · least likely: token ${lowest + 1} (p = ${Math.exp(Number(lps[lowest])).toFixed(3)})`),
      h('ol', { class: 'token-list' }, lps.map((lp, j) => {
        const v = Number(lp);
        return h('li', {
          class: 'token',
          title: `token ${j + 1}${ids[j] != null ? `, id ${ids[j]}` : ''}: log p = ${v.toFixed(4)}, p = ${Math.exp(v).toFixed(4)}`,
          style: { background: tokenColor(v) },
        },
        h('span', { class: 'token-id mono' }, ids[j] != null ? `#${ids[j]}` : `${j + 1}`),
        h('span', { class: 'token-lp mono' }, v.toFixed(2)));
      })));
  }

  // The policy call of one step, or a line saying there was none to show.
  function policyCall(step, steps, i) {
    const hasPrompt = step.prompt != null && step.prompt !== '';
    const hasRaw = step.raw_output != null && step.raw_output !== '';
    const tokens = tokensView(step);
    if (!hasPrompt && !hasRaw && !tokens) {
      return h('p', { class: 'muted', id: 'policy-call-none' },
        'No model call recorded for this step (rule-based policies such as scripted and random give no prompt or output).');
    }
    return h('div', { class: 'policy-call', id: 'policy-call' },
      hasPrompt ? h('details', { class: 'raw', open: true },
        h('summary', null, 'Prompt (images where the model saw them)'), promptView(step, steps, i))
        : h('p', { class: 'muted' }, 'The policy recorded no prompt.'),
      hasRaw ? h('div', { class: 'raw-output' }, h('div', { class: 'field-label' }, 'Raw output'),
        h('pre', { class: 'pre', id: 'step-raw-output' }, String(step.raw_output))) : null,
      tokens || h('p', { class: 'muted small' }, 'No token log-probabilities stored for this step.'));
  }

  SG.replay = SG.replay || {};
  SG.replay.policyCall = policyCall;
})();
