// What the Events page asks about the log, behind one small interface:
//
//   openTail(filters, handlers)  a live tail across streams, with filters,
//                                from a starting point (tail N, since T)
//   boardAsOf(at, params)        one page of the queue board as it stood
//                                at time `at`, with its counts
//
// The tail is GET /v1/events/live; the board is GET /v1/queue/tasks?as_of=
// (the board rebuilt from the log up to `at`, as `queue list --as-of`
// does). A closed window (since..until, paged) could come from
// GET /v1/audit without touching the page.

import { api, query } from './api.js';
import { openFeed, whileVisible } from './sse.js';

export function openTail(filters, handlers) {
  const p = { payloads: 'true' };
  if (filters.stream) p.stream = filters.stream;
  if (filters.type) p.type = filters.type;
  if (filters.actor) p.actor = filters.actor;
  if (filters.aggregate) p.aggregate = filters.aggregate;
  if (filters.since) p.since = filters.since;
  else p.tail = filters.tail ?? 100;
  const feed = openFeed(p, handlers);
  // Hidden, the tail lets its connection go; shown again, it resumes
  // after the last event it received.
  const unwatch = whileVisible(feed, false);
  return {
    close() {
      unwatch();
      feed.close();
    },
  };
}

export function boardAsOf(at, { queue = '', status = '', cursor = '', limit = 100 } = {}) {
  return api('/v1/queue/tasks' + query({ as_of: at, queue, status, cursor, limit }));
}

export function boardNow({ queue = '' } = {}) {
  return api('/v1/queue/tasks' + query({ queue, limit: 1 }));
}
