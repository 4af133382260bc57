// Marks the current document before action N, so that settle.js can tell a navigation away
// (beforeunload fires when it starts, long before the next document commits).
//
// A form submission starts its navigation in a task of its own, queued after the key or
// click that submitted it: a settling probe that runs first would find this page quiet and
// observe it as if nothing were coming. The submit event itself is synchronous, so it is
// noted here (when no handler cancelled it and it navigates this window), and settle.js
// waits for the navigation to begin. A script's `form.submit()` fires no submit event but
// navigates the same way, so the method notes it too.
(() => {
  const n = __ACTION__;
  window.addEventListener('beforeunload', () => { window.__sgLeaving = n; }, { once: true });
  window.__sgAction = n;
  if (!window.__sgSubmitHooked) {
    // Once per document; the listener reads which action is current.
    window.__sgSubmitHooked = true;
    // Attributes, not properties: a field named "method" or "target" shadows those. And
    // never in the page's way: a failure here must not stop its submission.
    const note = (form, submitter) => {
      try {
        const attr = (name) => (submitter && submitter.getAttribute('form' + name)) || form.getAttribute(name) || '';
        const target = attr('target');
        if (String(attr('method')).toLowerCase() === 'dialog' || (target && target !== '_self')) return;
        window.__sgSubmitting = { n: window.__sgAction, at: performance.now() };
      } catch (e) { /* see above */ }
    };
    window.addEventListener('submit', (e) => {
      if (!e.defaultPrevented) note(e.target, e.submitter);
    });
    const proto = HTMLFormElement.prototype;
    const submit = proto.submit;
    proto.submit = function () {
      note(this, null);
      return submit.call(this);
    };
  }
  return true;
})()
