// One task: its packet, its Markdown checkpoint (sanitized), its event
// timeline with payloads, and the retry action; live.

import { api, enc } from '../api.js';
import { useLive } from '../live.js';
import { href } from '../router.js';
import { time } from '../format.js';
import { Badge, ErrorBox, Loading, Payload, confirmAction, notify, useData } from '../components/common.jsx';
import { Markdown } from '../components/Markdown.jsx';
import { Timeline } from '../components/Timeline.jsx';
import { useWhoami } from '../whoami.js';
import { CANCELLABLE } from './Tasks.jsx';

async function loadTask(id) {
  const [task, audit] = await Promise.all([api(`/v1/queue/tasks/${enc(id)}`), api(`/v1/audit/${enc(id)}`)]);
  let checkpoint = null;
  if (task.checkpoint) {
    try {
      checkpoint = await api(`/v1/queue/tasks/${enc(id)}/checkpoint`, { text: true });
    } catch (e) {
      if (e.code !== 'not_found') throw e;
    }
  }
  return { task, events: audit.events, checkpoint };
}

export function Task({ id }) {
  const { data, error, loading, reload } = useData(() => loadTask(id), [id]);
  useLive((ev) => ev.aggregate_id === id, reload, 300);
  const me = useWhoami();
  if (loading && !data) return <Loading what="Loading the task" />;
  if (!data) return <ErrorBox error={error} />;
  const t = data.task;
  const retry = async () => {
    const yes = await confirmAction({
      title: t.status === 'dead' ? 'Retry dead letter' : 'Requeue task',
      message: `Queue task ${t.task_id} (${t.status}) again with fresh attempts? Its history stays in the log.`,
      confirmLabel: t.status === 'dead' ? 'Retry' : 'Requeue',
    });
    if (!yes) return;
    try {
      await api(`/v1/queue/tasks/${enc(t.task_id)}/retry`, { method: 'POST', body: {} });
      notify(`Task ${t.task_id} queued again.`, 'ok');
      reload();
    } catch (e) {
      notify(`Retry refused: ${e.message}`, 'error');
    }
  };
  const cancel = async () => {
    const yes = await confirmAction({
      title: 'Cancel task',
      message:
        t.status === 'claimed'
          ? `Cancel task ${t.task_id}? ${t.claimed_by} holds it: its pool stops the work at its next heartbeat. Tasks waiting for it are cancelled too.`
          : `Cancel task ${t.task_id} (${t.status})? It will never run; tasks waiting for it are cancelled too.`,
      confirmLabel: 'Cancel task',
    });
    if (!yes) return;
    try {
      await api(`/v1/queue/tasks/${enc(t.task_id)}/cancel`, { method: 'POST', body: {} });
      notify(`Task ${t.task_id} cancelled.`, 'ok');
      reload();
    } catch (e) {
      notify(`Cancel refused: ${e.message}`, 'error');
    }
  };
  return (
    <section aria-labelledby="task-title">
      <p class="crumbs">
        <a href={href('/tasks', { queue: t.queue })}>Tasks in {t.queue}</a>
      </p>
      <h1 id="task-title">
        Task <span class="mono">{t.task_id}</span> <Badge status={t.status} />
      </h1>
      <ErrorBox error={error} />
      <div class="bar">
        {me.may('queue.retry') && (t.status === 'failed' || t.status === 'dead') && (
          <button type="button" class="primary" onClick={retry} data-action="retry">
            {t.status === 'dead' ? 'Retry' : 'Requeue'}
          </button>
        )}
        {me.may('queue.cancel') && CANCELLABLE.includes(t.status) && !t.cancel_requested && (
          <button type="button" class="secondary" onClick={cancel} data-action="cancel">
            Cancel
          </button>
        )}
      </div>
      <div class="two-col">
        <div>
          <h2>Packet</h2>
          <dl class="kv">
            <dt>Objective</dt>
            <dd class="pre">{t.objective}</dd>
            <dt>Queue</dt>
            <dd>{t.queue}</dd>
            {t.acceptance && (
              <>
                <dt>Acceptance</dt>
                <dd class="pre">{t.acceptance}</dd>
              </>
            )}
            {t.inputs && t.inputs.length > 0 && (
              <>
                <dt>Inputs</dt>
                <dd>
                  <ul class="plain">
                    {t.inputs.map((x, i) => (
                      <li key={i} class="mono">
                        {x}
                      </li>
                    ))}
                  </ul>
                </dd>
              </>
            )}
            <dt>Budget</dt>
            <dd>
              {t.budget.max_steps} steps, {t.budget.max_tool_calls} tool calls{t.budget_exhausted ? ' (exhausted)' : ''}
            </dd>
            <dt>Attempts</dt>
            <dd>
              {t.attempts} of {t.max_attempts}
            </dd>
            {t.claimed_by && (
              <>
                <dt>Claimed by</dt>
                <dd>
                  {t.claimed_by}
                  {t.claimed_at && <> at {time(t.claimed_at)}</>}
                  {t.lease && <span class="muted"> (leased: dispatch #{t.lease.dispatch_seq}, delivery {t.lease.delivery})</span>}
                </dd>
              </>
            )}
            {t.last_error && (
              <>
                <dt>Last error</dt>
                <dd class="pre">{t.last_error}</dd>
              </>
            )}
            {t.cancel_requested && (
              <>
                <dt>Cancel requested</dt>
                <dd>its pool stops the work at its next heartbeat</dd>
              </>
            )}
            {t.retry_at && (
              <>
                <dt>Retry at</dt>
                <dd>{time(t.retry_at)}</dd>
              </>
            )}
            {t.parent_id && (
              <>
                <dt>Parent</dt>
                <dd>
                  <a href={href('/tasks/' + t.parent_id)}>{t.parent_id}</a>
                </dd>
              </>
            )}
            <dt>Created</dt>
            <dd>{time(t.created_at)}</dd>
            <dt>Updated</dt>
            <dd>{time(t.updated_at)}</dd>
            {t.metadata && Object.keys(t.metadata).length > 0 && (
              <>
                <dt>Metadata</dt>
                <dd>
                  <ul class="plain">
                    {Object.entries(t.metadata).map(([k, v]) => (
                      <li key={k}>
                        <span class="mono">{k}</span> = {v}
                      </li>
                    ))}
                  </ul>
                </dd>
              </>
            )}
          </dl>
          <details class="all-fields">
            <summary>Every field of the packet</summary>
            <Payload value={t} />
          </details>
          <h2>Checkpoint</h2>
          {data.checkpoint ? <Markdown text={data.checkpoint} label="Checkpoint" /> : <p class="muted">No checkpoint yet: the task has not finished.</p>}
        </div>
        <div>
          <h2>History</h2>
          <Timeline events={data.events} label={`Events of task ${t.task_id}`} />
        </div>
      </div>
    </section>
  );
}
