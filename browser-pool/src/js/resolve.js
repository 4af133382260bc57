// Finds an action's target element, scrolls it into view if needed, and returns the point to
// click plus what kind of element it is. Returns {error} when the target is not usable.
(() => {
  const ID = __ID__, CSS = __CSS__;
  const el = CSS !== null ? document.querySelector(CSS) : document.querySelector('[data-sg-id="' + ID + '"]');
  if (!el) {
    return { error: CSS !== null ? 'no element matches css=' + JSON.stringify(CSS)
      : 'element ' + ID + ' is not on the page any more (the page changed; use the numbers of the latest observation)' };
  }
  let r = el.getBoundingClientRect();
  if (r.top < 0 || r.left < 0 || r.bottom > window.innerHeight || r.right > window.innerWidth) {
    el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    r = el.getBoundingClientRect();
  }
  if (r.width < 1 || r.height < 1) return { error: 'the element is not visible' };
  const tag = el.tagName.toLowerCase();
  return {
    x: r.left + r.width / 2, y: r.top + r.height / 2, tag,
    input_type: tag === 'input' ? (el.type || 'text').toLowerCase() : null,
    disabled: !!el.disabled,
  };
})()
