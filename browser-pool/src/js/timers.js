// Installed in every document before its own scripts (Page.addScriptToEvaluateOnNewDocument):
// keeps track of the callbacks the page has scheduled as a consequence of something it just
// did, so that settling can wait for an action's delayed effects (a result shown 200 ms
// after a click, an accordion animating open, a render deferred to the next frame)
// instead of guessing with a long fixed quiet window.
//
// Every scheduled callback belongs to a chain rooted where page code ran outside any timer
// (an event handler, a network callback, the page's own scripts at load). A callback
// counts while its chain is younger than CHAIN ms: timeouts of at most HORIZON ms (UI
// delays, debounces, transitions; longer ones are timers, not effects), animation frames
// and short intervals (animation ticks). Older chains (a polling loop or an animation
// started long ago, a ticker) do not count, so a page that is always busy does not hold
// settling up any longer than it did before. An entry overdue by more than OVERDUE ms (a
// throttled page) stops counting.
(() => {
  if (window.__sgTimers) return;
  const HORIZON = 500;
  const CHAIN = 1000;
  const TICK = 50;
  const OVERDUE = 100;
  const FRAME = 16;
  const setT = window.setTimeout;
  const clearT = window.clearTimeout;
  const setI = window.setInterval;
  const clearI = window.clearInterval;
  const raf = window.requestAnimationFrame;
  const caf = window.cancelAnimationFrame;
  const now = () => performance.now();
  // Key ('t', 'i' or 'f' plus the page's id) -> { due, root } of a counted callback.
  const counted = new Map();
  // Root of the chain whose callback is running: null outside timer callbacks.
  let current = null;
  // When an animation-frame loop older than CHAIN last asked for a frame (a canvas or
  // script-driven animation that never ends: it makes an unpaced browser render flat out).
  let looped = -Infinity;
  const pending = () => {
    const t = now();
    let n = 0;
    for (const [key, e] of counted) {
      const live = t - e.root <= CHAIN && (e.due === null || e.due + OVERDUE >= t);
      if (live) n++;
      else counted.delete(key);
    }
    return n;
  };
  Object.defineProperty(window, '__sgTimers', {
    value: { pending, setTimeout: setT, looping: () => now() - looped < 250 },
    enumerable: false,
  });

  const root = () => (current === null ? now() : current);
  function wrap(fn, chain, key, once) {
    return function (...args) {
      if (once && key.value !== undefined) counted.delete(key.value);
      const before = current;
      current = chain;
      try {
        return fn.apply(this, args);
      } finally {
        current = before;
      }
    };
  }
  // Schedules `fn` through `schedule(wrapped)`, counting it under `prefix` when `counts`.
  function track(prefix, fn, counts, due, once, schedule) {
    const chain = root();
    const key = { value: undefined };
    const id = schedule(wrap(fn, chain, key, once));
    if (counts && now() - chain <= CHAIN) {
      key.value = prefix + id;
      counted.set(key.value, { due, root: chain });
    }
    return id;
  }

  window.setTimeout = function setTimeout(fn, delay, ...args) {
    if (typeof fn !== 'function') return setT.call(window, fn, delay, ...args);
    const ms = Math.max(0, Number(delay) || 0);
    return track('t', fn, ms <= HORIZON, now() + ms, true,
      (f) => setT.call(window, f, delay, ...args));
  };
  // Timeouts and intervals share their ids, and pages clear one with the other's function.
  const forget = (id) => { counted.delete('t' + id); counted.delete('i' + id); };
  window.clearTimeout = function clearTimeout(id) {
    forget(id);
    return clearT.call(window, id);
  };
  window.setInterval = function setInterval(fn, delay, ...args) {
    if (typeof fn !== 'function') return setI.call(window, fn, delay, ...args);
    const ms = Math.max(0, Number(delay) || 0);
    return track('i', fn, ms <= TICK, null, false,
      (f) => setI.call(window, f, delay, ...args));
  };
  window.clearInterval = function clearInterval(id) {
    forget(id);
    return clearI.call(window, id);
  };
  if (raf && caf) {
    window.requestAnimationFrame = function requestAnimationFrame(fn) {
      if (typeof fn !== 'function') return raf.call(window, fn);
      if (current !== null && now() - current > CHAIN) looped = now();
      return track('f', fn, true, now() + FRAME, true, (f) => raf.call(window, f));
    };
    window.cancelAnimationFrame = function cancelAnimationFrame(id) {
      counted.delete('f' + id);
      return caf.call(window, id);
    };
  }
})();
