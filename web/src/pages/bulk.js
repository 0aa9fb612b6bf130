// Bulk actions: retry or cancel several tasks, retry every dead letter of
// a queue (or of all queues).

import { api, enc, query } from '../api.js';
import { confirmAction, notify } from '../components/common.jsx';

// retryTasks retries the given task ids, four at a time, as the caller
// (the server records the authenticated name, or "operator"); resolves
// with {ok, failed: [{id, error}]}.
export function retryTasks(ids) {
  return eachTask(ids, 'retry');
}

// cancelTasks cancels the given task ids, like retryTasks.
export function cancelTasks(ids) {
  return eachTask(ids, 'cancel');
}

async function eachTask(ids, action) {
  const failed = [];
  let ok = 0;
  let next = 0;
  const worker = async () => {
    while (next < ids.length) {
      const id = ids[next++];
      try {
        await api(`/v1/queue/tasks/${enc(id)}/${action}`, { method: 'POST', body: {} });
        ok++;
      } catch (e) {
        failed.push({ id, error: e });
      }
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  return { ok, failed };
}

// deadIDs lists the dead tasks of queue (every queue when empty).
export async function deadIDs(queue) {
  const ids = [];
  let cursor = '';
  do {
    const page = await api('/v1/queue/tasks' + query({ queue, status: 'dead', limit: 1000, cursor }));
    for (const t of page.tasks) ids.push(t.task_id);
    cursor = page.next_cursor || '';
  } while (cursor);
  return ids;
}

export async function retryAllDead(queue) {
  const ids = await deadIDs(queue);
  if (ids.length === 0) {
    notify('No dead letters to retry.');
    return;
  }
  const where = queue ? `queue ${queue}` : 'every queue';
  const yes = await confirmAction({
    title: 'Retry dead letters',
    message: `Queue all ${ids.length} dead task${ids.length === 1 ? '' : 's'} of ${where} again, with fresh attempts?`,
    confirmLabel: `Retry ${ids.length}`,
  });
  if (!yes) return;
  const res = await retryTasks(ids);
  notify(
    `${res.ok} task${res.ok === 1 ? '' : 's'} queued again` + (res.failed.length ? `; ${res.failed.length} refused (${res.failed[0].error.message})` : '.'),
    res.failed.length ? 'warn' : 'ok',
  );
}
