// Reads the state of the first element matching a CSS selector (null when none matches),
// looking into open shadow roots and same-origin iframes as element numbers do.
(() => {
  // #include numbered.js
  const el = selected(__CSS__);
  if (!el) return null;
  const tag = el.tagName.toLowerCase();
  let value = null;
  if (tag === 'select') {
    const o = el.options[el.selectedIndex];
    value = o ? o.text : '';
  } else if ('value' in el && (tag === 'input' || tag === 'textarea' || tag === 'output')) {
    value = String(el.value);
  }
  const checked = 'checked' in el && tag === 'input' ? !!el.checked : null;
  return { tag, text: (el.innerText || el.textContent || ''), value, checked };
})()
