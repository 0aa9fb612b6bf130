// The dashboard's one live connection: every stream, without payloads.
// Pages subscribe to it and refresh what an event touches; nothing polls.
// While the tab is hidden the connection is closed (browsers allow six
// per server); when it shows again the feed starts from now and every
// page refreshes once.

import { useEffect, useRef, useState } from 'preact/hooks';
import { openFeed, whileVisible } from './sse.js';

const subscribers = new Set();
const resyncers = new Set();
const statusListeners = new Set();
let feed = null;
let hellos = 0;
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
      onHello() {
        // A new connection after the first: events may have been missed.
        if (hellos++ > 0) for (const fn of resyncers) fn();
      },
      onStatus(state, detail) {
        current = { state, detail: detail || '' };
        for (const fn of statusListeners) fn(current);
      },
    },
  );
  whileVisible(feed, true);
}

// subscribe calls fn with every event appended from now on, and resync()
// after a reconnection that may have missed events; returns the
// unsubscribe function.
export function subscribe(fn, resync) {
  start();
  subscribers.add(fn);
  if (resync) resyncers.add(resync);
  return () => {
    subscribers.delete(fn);
    if (resync) resyncers.delete(resync);
  };
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
// events for which match(ev) is true, and after a reconnection.
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
    const schedule = () => {
      if (!timer) timer = setTimeout(fire, Math.max(0, last + wait - Date.now()));
    };
    const unsub = subscribe((ev) => ref.current.match(ev) && schedule(), schedule);
    return () => {
      unsub();
      if (timer) clearTimeout(timer);
    };
  }, [wait]);
}
