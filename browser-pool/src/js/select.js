// Chooses an option of a <select> by visible text (case-insensitive) or value.
(() => {
  const ID = __ID__, CSS = __CSS__, OPTION = __TEXT__;
  const el = CSS !== null ? document.querySelector(CSS) : document.querySelector('[data-sg-id="' + ID + '"]');
  if (!el) return { error: 'the element disappeared' };
  if (el.tagName.toLowerCase() !== 'select') return { error: 'element is a <' + el.tagName.toLowerCase() + '>, not a <select>' };
  const norm = (s) => (s || '').replace(/\s+/g, ' ').trim().toLowerCase();
  const want = norm(OPTION);
  const opts = Array.from(el.options);
  const opt = opts.find((o) => norm(o.text) === want) || opts.find((o) => o.value === OPTION) ||
    opts.find((o) => norm(o.text).includes(want) && want !== '');
  if (!opt) {
    return { error: 'no option ' + JSON.stringify(OPTION) + '; options are ' +
      JSON.stringify(opts.slice(0, 15).map((o) => o.text.trim())) };
  }
  if (opt.disabled) return { error: 'option ' + JSON.stringify(opt.text.trim()) + ' is disabled' };
  el.focus();
  el.value = opt.value;
  el.dispatchEvent(new Event('input', { bubbles: true }));
  el.dispatchEvent(new Event('change', { bubbles: true }));
  return { mode: 'done' };
})()
