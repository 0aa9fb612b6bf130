// A live feed of the log (GET /v1/events/live) read as server-sent events
// over fetch, so the request carries the bearer token like every other
// call (EventSource cannot send headers). It reconnects by itself and
// resumes after the last sequence it saw of each stream.
//
// A feed holds a connection open, and browsers allow only six per server
// over HTTP/1.1, so a feed is suspended while its tab is hidden (see
// live.js) and resumed when it shows again.

import { authHeaders, query, unauthorized } from './api.js';

// openFeed opens a feed with params (stream, type, actor, aggregate,
// since, tail, payloads) and calls handlers.onEvent(ev), onReady(),
// onHello(), onStatus('connecting'|'live'|'reconnecting'|'paused'|'error',
// detail). Returns { close, suspend, resume(fresh) }: resume(true) starts
// again from now instead of after the last event seen.
export function openFeed(params, handlers) {
  let closed = false;
  let suspended = false;
  let ctrl = null;
  let positions = null; // stream -> last sequence seen; set once connected
  let delay = 500;
  let wake = null;

  const status = (s, d) => handlers.onStatus && handlers.onStatus(s, d);
  const pause = (ms) =>
    new Promise((r) => {
      const timer = ms === undefined ? null : setTimeout(r, ms);
      wake = () => {
        if (timer) clearTimeout(timer);
        r();
      };
    });

  async function connect() {
    while (!closed) {
      if (suspended) {
        status('paused');
        await pause();
        continue;
      }
      const p = { ...params };
      if (positions) {
        delete p.since;
        delete p.tail;
        p.after = Object.entries(positions)
          .map(([s, seq]) => `${s}:${seq}`)
          .join(',');
      }
      ctrl = new AbortController();
      status(positions ? 'reconnecting' : 'connecting');
      try {
        const res = await fetch('/v1/events/live' + query(p), {
          headers: { Accept: 'text/event-stream', ...authHeaders() },
          signal: ctrl.signal,
          credentials: 'same-origin',
        });
        if (!res.ok) {
          let msg = res.statusText;
          try {
            msg = (await res.json()).error.message;
          } catch {
            /* not the error shape */
          }
          if (res.status === 401) unauthorized();
          status('error', msg);
          if (res.status >= 400 && res.status < 500 && res.status !== 401 && res.status !== 429) return; // a bad filter: retrying will not help
        } else {
          delay = 500;
          await read(res.body);
        }
      } catch (e) {
        if (closed) return;
        if (!suspended) status('reconnecting', String(e && e.message ? e.message : e));
      }
      if (closed || suspended) continue;
      await pause(delay);
      delay = Math.min(delay * 2, 10000);
    }
  }

  async function read(body) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        dispatch(block);
      }
    }
  }

  function dispatch(block) {
    let event = 'message';
    let data = '';
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data += line.slice(6);
    }
    let v = {};
    try {
      v = data ? JSON.parse(data) : {};
    } catch {
      return;
    }
    switch (event) {
      case 'hello':
        if (!positions) positions = { ...v.start };
        status('live');
        handlers.onHello && handlers.onHello();
        break;
      case 'event':
        positions[v.stream] = Math.max(positions[v.stream] || 0, v.seq);
        handlers.onEvent && handlers.onEvent(v);
        break;
      case 'ready':
        handlers.onReady && handlers.onReady();
        break;
      case 'ping':
        for (const [s, seq] of Object.entries(v.positions || {})) {
          positions[s] = Math.max(positions[s] || 0, seq);
        }
        break;
      case 'lagged':
        status('reconnecting', 'fell behind; resuming');
        ctrl.abort();
        break;
    }
  }

  connect();
  return {
    close() {
      closed = true;
      if (ctrl) ctrl.abort();
      wake && wake();
    },
    suspend() {
      if (suspended || closed) return;
      suspended = true;
      if (ctrl) ctrl.abort();
    },
    resume(fresh) {
      if (!suspended || closed) return;
      suspended = false;
      if (fresh) positions = null;
      wake && wake();
    },
  };
}

// whileVisible suspends feed while the tab is hidden and resumes it when
// it shows again (resume(fresh) is called with the given flag); returns
// the function that stops watching.
export function whileVisible(feed, fresh, onShown) {
  const on = () => {
    if (document.visibilityState === 'hidden') feed.suspend();
    else {
      feed.resume(fresh);
      onShown && onShown();
    }
  };
  document.addEventListener('visibilitychange', on);
  window.addEventListener('pagehide', feed.suspend);
  const show = (e) => e.persisted && on();
  window.addEventListener('pageshow', show);
  return () => {
    document.removeEventListener('visibilitychange', on);
    window.removeEventListener('pagehide', feed.suspend);
    window.removeEventListener('pageshow', show);
  };
}
