// Tasks: the queue board, filterable (queue, status, text, updated since)
// and paginated; a task can be added; failed and dead tasks can be
// retried and waiting ones cancelled, by selection, or all dead letters at
// once (each action only for a role that may); live.

import { useState } from 'preact/hooks';
import { api, query } from '../api.js';
import { useLive } from '../live.js';
import { href, navigate } from '../router.js';
import { sortStatuses, TASK_ORDER } from '../status.js';
import { ago, time } from '../format.js';
import { Badge, ErrorBox, Loading, confirmAction, notify, useData } from '../components/common.jsx';
import { cancelTasks, retryAllDead, retryTasks } from './bulk.js';
import { useWhoami } from '../whoami.js';
import { AddTask } from './AddTask.jsx';

const SINCE = { '': 'any time', '15m': 'last 15 minutes', '1h': 'last hour', '24h': 'last day', '168h': 'last week' };

function sinceTime(v) {
  const m = /^(\d+)([mh])$/.exec(v || '');
  if (!m) return '';
  const n = Number(m[1]) * (m[2] === 'h' ? 3600e3 : 60e3);
  return new Date(Date.now() - n).toISOString();
}

const retryable = (s) => s === 'failed' || s === 'dead';
// The statuses a task can be cancelled in (the server decides; a refusal
// is shown).
export const CANCELLABLE = ['scheduled', 'waiting', 'queued', 'claimed'];
const cancellable = (s) => CANCELLABLE.includes(s);

export function Tasks({ params }) {
  const { queue = '', status = '', text = '', since = '', cursor = '' } = params;
  const [stack, setStack] = useState([]);
  const [selected, setSelected] = useState(new Set());
  const load = () => api('/v1/queue/tasks' + query({ queue, status, text, since: sinceTime(since), cursor, limit: 50 }));
  const { data, error, loading, reload } = useData(load, [queue, status, text, since, cursor]);
  useLive((ev) => ev.stream === 'TRELLIS_QUEUE', reload, 700);
  const me = useWhoami();
  const mayRetry = me.may('queue.retry');
  const mayCancel = me.may('queue.cancel');
  const selectable = (st) => (mayRetry && retryable(st)) || (mayCancel && cancellable(st));

  const set = (changes) => {
    setStack([]);
    setSelected(new Set());
    navigate('/tasks', { queue, status, text, since, ...changes, cursor: '' }, true);
  };
  const queues = data ? Object.keys(data.counts).sort() : [];
  const statuses = sortStatuses([...TASK_ORDER.filter((s) => ['queued', 'claimed', 'done', 'failed', 'dead'].includes(s)), ...(data ? Object.values(data.counts).flatMap((c) => Object.keys(c)) : []), ...(status ? [status] : [])]);

  // The selection, by what can be done to each selected task as it is now.
  const rows = data ? data.tasks.filter((t) => selected.has(t.task_id)) : [];
  const toRetry = rows.filter((t) => retryable(t.status)).map((t) => t.task_id);
  const toCancel = rows.filter((t) => cancellable(t.status)).map((t) => t.task_id);
  const dead = data ? Object.entries(data.counts).reduce((n, [q, c]) => n + (!queue || q === queue ? c.dead || 0 : 0), 0) : 0;
  const toggle = (id) => {
    const s = new Set(selected);
    s.has(id) ? s.delete(id) : s.add(id);
    setSelected(s);
  };
  const cancelSelected = async () => {
    const ids = toCancel;
    const yes = await confirmAction({
      title: 'Cancel tasks',
      message: `Cancel ${ids.length} task${ids.length === 1 ? '' : 's'}? They will never run (a claimed one stops at its pool's next heartbeat); tasks waiting for them are cancelled too.`,
      confirmLabel: `Cancel ${ids.length}`,
    });
    if (!yes) return;
    const res = await cancelTasks(ids);
    setSelected(new Set());
    notify(`${res.ok} cancelled` + (res.failed.length ? `; ${res.failed.length} refused: ${res.failed[0].error.message}` : '.'), res.failed.length ? 'warn' : 'ok');
    reload();
  };
  const retrySelected = async () => {
    const ids = toRetry;
    const yes = await confirmAction({ title: 'Retry tasks', message: `Queue ${ids.length} task${ids.length === 1 ? '' : 's'} again with fresh attempts?`, confirmLabel: `Retry ${ids.length}` });
    if (!yes) return;
    const res = await retryTasks(ids);
    setSelected(new Set());
    notify(`${res.ok} queued again` + (res.failed.length ? `; ${res.failed.length} refused: ${res.failed[0].error.message}` : '.'), res.failed.length ? 'warn' : 'ok');
    reload();
  };

  return (
    <section aria-labelledby="tasks-title">
      <h1 id="tasks-title">Tasks</h1>
      <form class="filters" role="search" aria-label="Filter tasks" onSubmit={(e) => (e.preventDefault(), set({ text: e.currentTarget.elements.text.value }))}>
        <label>
          Queue
          <select name="queue" value={queue} onChange={(e) => set({ queue: e.currentTarget.value })}>
            <option value="">all queues</option>
            {[...new Set([...queues, ...(queue ? [queue] : [])])].map((q) => (
              <option key={q} value={q}>
                {q}
              </option>
            ))}
          </select>
        </label>
        <label>
          Status
          <select name="status" value={status} onChange={(e) => set({ status: e.currentTarget.value })}>
            <option value="">any status</option>
            {statuses.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Updated
          <select name="since" value={since} onChange={(e) => set({ since: e.currentTarget.value })}>
            {Object.entries(SINCE).map(([v, l]) => (
              <option key={v} value={v}>
                {l}
              </option>
            ))}
          </select>
        </label>
        <label class="grow">
          Text
          <input name="text" type="search" defaultValue={text} placeholder="objective words or task id" />
        </label>
        <button type="submit">Filter</button>
      </form>
      {me.may('queue.add') && <AddTask queue={queue} onAdded={reload} />}
      <div class="bar">
        {mayRetry && dead > 0 && (status === 'dead' || status === '') ? (
          <button type="button" class="secondary" onClick={() => retryAllDead(queue).then(reload)} data-action="retry-all-dead">
            Retry all dead letters{queue ? ' in ' + queue : ''}
          </button>
        ) : null}
        {toRetry.length > 0 && (
          <button type="button" class="primary" onClick={retrySelected} data-action="retry-selected">
            Retry selected ({toRetry.length})
          </button>
        )}
        {toCancel.length > 0 && (
          <button type="button" class="secondary" onClick={cancelSelected} data-action="cancel-selected">
            Cancel selected ({toCancel.length})
          </button>
        )}
      </div>
      <ErrorBox error={error} />
      {loading && !data ? (
        <Loading what="Loading tasks" />
      ) : (
        data && (
          <>
            <div class="table-wrap">
              <table class="tasks">
                <caption class="sr-only">Tasks, oldest first</caption>
                <thead>
                  <tr>
                    <th scope="col">
                      <span class="sr-only">Select</span>
                    </th>
                    <th scope="col">Task</th>
                    <th scope="col">Status</th>
                    <th scope="col">Queue</th>
                    <th scope="col">Objective</th>
                    <th scope="col">Claimed by</th>
                    <th scope="col">Attempts</th>
                    <th scope="col">Updated</th>
                  </tr>
                </thead>
                <tbody>
                  {data.tasks.map((t) => (
                    <tr key={t.task_id} data-task={t.task_id} data-status={t.status}>
                      <td class="select">
                        {selectable(t.status) && (
                          <input type="checkbox" checked={selected.has(t.task_id)} onChange={() => toggle(t.task_id)} aria-label={`Select task ${t.task_id}`} />
                        )}
                      </td>
                      <td class="mono" data-label="Task">
                        <a href={href('/tasks/' + t.task_id)}>{t.task_id}</a>
                      </td>
                      <td data-label="Status">
                        <Badge status={t.status} />
                        {t.budget_exhausted && <span class="muted"> budget</span>}
                      </td>
                      <td data-label="Queue">{t.queue}</td>
                      <td class="objective" data-label="Objective">
                        {t.objective}
                      </td>
                      <td data-label="Claimed by">{t.claimed_by || ''}</td>
                      <td class="num" data-label="Attempts">
                        {t.attempts}
                      </td>
                      <td data-label="Updated">
                        <time dateTime={t.updated_at} title={time(t.updated_at)}>
                          {ago(t.updated_at)}
                        </time>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            {data.tasks.length === 0 && <p class="empty">No task matches.</p>}
            <nav class="pager" aria-label="Pages">
              <button type="button" disabled={!cursor} onClick={() => (setStack([]), navigate('/tasks', { ...params, cursor: '' }, true))}>
                First page
              </button>
              <button
                type="button"
                disabled={stack.length === 0}
                onClick={() => {
                  const s = stack.slice(0, -1);
                  setStack(s);
                  navigate('/tasks', { ...params, cursor: stack[stack.length - 1] }, true);
                }}
              >
                Previous
              </button>
              <button
                type="button"
                disabled={!data.next_cursor}
                onClick={() => {
                  setStack([...stack, cursor]);
                  navigate('/tasks', { ...params, cursor: data.next_cursor }, true);
                }}
              >
                Next
              </button>
            </nav>
          </>
        )
      )}
    </section>
  );
}
