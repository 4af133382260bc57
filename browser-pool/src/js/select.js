// Chooses an option of a <select> by visible text (case-insensitive) or value; in a
// multiple <select>, adds it to the options already chosen.
(() => {
  const ID = __ID__, CSS = __CSS__, OPTION = __TEXT__;
  // #include numbered.js
  const el = CSS !== null ? selected(CSS) : numbered(ID);
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
  // A multiple <select> keeps what is chosen already: each select() adds one option.
  if (el.multiple) opt.selected = true;
  else el.value = opt.value;
  const win = el.ownerDocument.defaultView;
  el.dispatchEvent(new win.Event('input', { bubbles: true }));
  el.dispatchEvent(new win.Event('change', { bubbles: true }));
  return { mode: 'done' };
})()
