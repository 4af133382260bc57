// Shared by the snippets that act on element N (spliced in by js.rs).
  // Element N of the last observation (observe.js keeps them in the top window under
  // Symbol.for('surfgym.elements'); it may sit in a same-origin iframe or a shadow root),
  // while it and every iframe around it are still in their documents.
  const numbered = (n) => {
    const el = (window[Symbol.for('surfgym.elements')] || [])[n - 1];
    if (!el) return null;
    for (let node = el; ;) {
      if (!node.isConnected) return null;
      const win = node.ownerDocument.defaultView;
      if (!win) return null;
      if (win === window) return el;
      let fe = null;
      try {
        fe = win.frameElement;
      } catch (e) {
        return null;
      }
      if (!fe) return null;
      node = fe;
    }
  };
  // The first element matching a CSS selector: in the top document, else inside open
  // shadow roots and same-origin iframes (depth first, in document order), which element
  // numbers reach too. An invalid selector throws, as querySelector does.
  const selected = (css) => {
    const search = (root) => {
      const hit = root.querySelector(css);
      if (hit) return hit;
      for (const el of root.querySelectorAll('*')) {
        if (el.shadowRoot) {
          const h = search(el.shadowRoot);
          if (h) return h;
        }
        if (el.tagName === 'IFRAME' || el.tagName === 'FRAME') {
          let doc = null;
          try {
            doc = el.contentDocument;
          } catch (e) {
            doc = null;
          }
          if (doc && doc.documentElement) {
            const h = search(doc);
            if (h) return h;
          }
        }
      }
      return null;
    };
    return search(document);
  };
