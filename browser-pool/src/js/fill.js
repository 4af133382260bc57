// Prepares the focused target for typing. For inputs whose value cannot be typed as text
// (date, time, colour, range...) it sets the value itself and fires input/change; returns
// "done" then. Otherwise clears the content when asked and returns "type" so the caller
// inserts the text with real input events.
(() => {
  const ID = __ID__, CSS = __CSS__, TEXT = __TEXT__, CLEAR = __CLEAR__;
  // #include numbered.js
  const el = CSS !== null ? selected(CSS) : numbered(ID);
  if (!el) return { error: 'the element disappeared before typing' };
  // The element's own window (an iframe's): its prototypes, events and selection.
  const win = el.ownerDocument.defaultView;
  const tag = el.tagName.toLowerCase();
  const t = tag === 'input' ? (el.type || 'text').toLowerCase() : '';
  if (tag === 'select') return { error: 'element is a <select>: use select(target, "option")' };
  if (tag === 'input' && ['checkbox', 'radio', 'submit', 'button', 'reset', 'image', 'file'].includes(t)) {
    return { error: 'cannot type into an input of type ' + t };
  }
  if ((tag === 'input' || tag === 'textarea') && el.readOnly) {
    return { error: 'the field is read-only (a picker or script fills it: try clicking it)' };
  }
  if (el.disabled) return { error: 'the field is disabled' };
  const setValue = (v) => {
    const proto = tag === 'textarea' ? win.HTMLTextAreaElement.prototype : win.HTMLInputElement.prototype;
    Object.getOwnPropertyDescriptor(proto, 'value').set.call(el, v);
    el.dispatchEvent(new win.Event('input', { bubbles: true }));
    el.dispatchEvent(new win.Event('change', { bubbles: true }));
  };
  if (['date', 'time', 'datetime-local', 'month', 'week', 'color', 'range'].includes(t)) {
    setValue(TEXT);
    if (el.value !== TEXT) return { error: 'value ' + JSON.stringify(TEXT) + ' is not valid for an input of type ' + t };
    return { mode: 'done' };
  }
  // activeElement of the element's own tree (document or shadow root).
  if (el.getRootNode().activeElement !== el) el.focus();
  if (CLEAR) {
    if (el.isContentEditable) {
      const range = el.ownerDocument.createRange();
      range.selectNodeContents(el);
      const sel = win.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
    } else if (el.value !== '') {
      if (typeof el.select === 'function') el.select();
      if (TEXT === '') setValue('');
    }
  } else if (typeof el.setSelectionRange === 'function' && ['text', 'search', 'url', 'tel', 'password', ''].includes(t)) {
    const n = el.value.length;
    el.setSelectionRange(n, n);
  }
  return { mode: 'type' };
})()
