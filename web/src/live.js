// The dashboard's one live connection: every stream, without payloads.
// Pages subscribe to it and refresh what an event touches; nothing polls.

import { useEffect, useRef, useState } from 'preact/hooks';
import { openFeed } from './sse.js';

const subscribers = new Set();
const statusListeners = new Set();
let feed = null;
let current = { state: 'connecting', detail: '' };

function start() {
  if (feed) return;
  feed = openFeed(
    {},
    {
      onEvent(ev) {
        for (const fn of subscribers) {
          try {
            fn(ev);
          } catch (e) {
            console.error(e);
          }
        }
      },
      onStatus(state, detail) {
        current = { state, detail: detail || '' };
        for (const fn of statusListeners) fn(current);
      },
    },
  );
}

// subscribe calls fn with every event appended from now on; returns the
// unsubscribe function.
export function subscribe(fn) {
  start();
  subscribers.add(fn);
  return () => subscribers.delete(fn);
}

// useLiveStatus is the connection's state for the header.
export function useLiveStatus() {
  const [s, set] = useState(current);
  useEffect(() => {
    start();
    statusListeners.add(set);
    set(current);
    return () => statusListeners.delete(set);
  }, []);
  return s;
}

// useLive calls refresh (at most once per `wait` ms, trailing) after
// events for which match(ev) is true.
export function useLive(match, refresh, wait = 500) {
  const ref = useRef({ match, refresh });
  ref.current = { match, refresh };
  useEffect(() => {
    let timer = null;
    let last = 0;
    const fire = () => {
      timer = null;
      last = Date.now();
      ref.current.refresh();
    };
    const unsub = subscribe((ev) => {
      if (!ref.current.match(ev) || timer) return;
      timer = setTimeout(fire, Math.max(0, last + wait - Date.now()));
    });
    return () => {
      unsub();
      if (timer) clearTimeout(timer);
    };
  }, [wait]);
}
