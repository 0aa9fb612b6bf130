// Durable workflow runs: the list (filtered by status and workflow) with
// the versions still in flight, and one run's journal as a step timeline,
// with Signal and Cancel for the roles that may; live.

import { useState } from 'preact/hooks';
import { api, enc, query } from '../api.js';
import { useLive } from '../live.js';
import { href, navigate } from '../router.js';
import { ago, dur, pretty, time } from '../format.js';
import { Badge, ErrorBox, Loading, Payload, confirmAction, notify, useData } from '../components/common.jsx';
import { notAllowedText, useWhoami } from '../whoami.js';

const STATUSES = ['running', 'sleeping', 'waiting', 'completed', 'failed', 'cancelled'];
const TERMINAL = ['completed', 'failed', 'cancelled'];
const isWorkflowEvent = (ev) => ev.stream === 'TRELLIS_WORKFLOWS';

export function Workflows({ params }) {
  const { status = '', workflow = '' } = params;
  const { data, error, loading, reload } = useData(() => api('/v1/workflows' + query({ status, workflow, limit: 200 })), [status, workflow]);
  useLive(isWorkflowEvent, reload, 500);
  const set = (changes) => navigate('/workflows', { status, workflow, ...changes }, true);
  const names = data ? [...new Set([...(data.versions || []).map((v) => v.workflow), ...(workflow ? [workflow] : [])])].sort() : [];
  const counts = (data && data.counts) || {};
  return (
    <section aria-labelledby="workflows-title">
      <h1 id="workflows-title">Workflow runs</h1>
      <form class="filters" aria-label="Filter runs" onSubmit={(e) => e.preventDefault()}>
        <label>
          Status
          <select name="status" value={status} onChange={(e) => set({ status: e.currentTarget.value })}>
            <option value="">any status</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
                {counts[s] ? ` (${counts[s]})` : ''}
              </option>
            ))}
          </select>
        </label>
        <label>
          Workflow
          <select name="workflow" value={workflow} onChange={(e) => set({ workflow: e.currentTarget.value })}>
            <option value="">every workflow</option>
            {names.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </label>
      </form>
      <ErrorBox error={error} />
      {loading && !data ? (
        <Loading what="Loading the runs" />
      ) : (
        data && (
          <>
            <div class="table-wrap">
              <table class="tasks runs">
                <caption class="sr-only">Workflow runs, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Run</th>
                    <th scope="col">Workflow</th>
                    <th scope="col">Status</th>
                    <th scope="col">Steps</th>
                    <th scope="col">Started</th>
                    <th scope="col">Updated</th>
                  </tr>
                </thead>
                <tbody>
                  {data.runs.map((r) => (
                    <tr key={r.run_id} data-run={r.run_id} data-status={r.status}>
                      <td class="mono" data-label="Run">
                        <a href={href('/workflows/' + r.run_id)}>{r.run_id}</a>
                      </td>
                      <td data-label="Workflow">
                        {r.workflow} <span class="muted">v{r.version}</span>
                      </td>
                      <td data-label="Status">
                        <Badge status={r.status} />
                        {r.error && <span class="muted"> {r.error.slice(0, 80)}</span>}
                      </td>
                      <td class="num" data-label="Steps">
                        {r.steps}
                      </td>
                      <td data-label="Started">
                        <time dateTime={r.started} title={time(r.started)}>
                          {ago(r.started)}
                        </time>
                      </td>
                      <td data-label="Updated">
                        <time dateTime={r.updated} title={time(r.updated)}>
                          {ago(r.updated)}
                        </time>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            {data.runs.length === 0 && (
              <p class="empty">
                No run{status ? ` is ${status}` : ' yet'}. Start one with <code>trellis workflow start NAME --input '{'{…}'}'</code> or{' '}
                <code>POST /v1/workflows</code>; it appears here at once.
              </p>
            )}
            {data.versions && data.versions.length > 0 && (
              <>
                <h2>Versions</h2>
                <table class="versions">
                  <caption class="sr-only">Registered workflow versions and their runs in flight</caption>
                  <thead>
                    <tr>
                      <th scope="col">Workflow</th>
                      <th scope="col">Version</th>
                      <th scope="col">Queue</th>
                      <th scope="col">Runs in flight</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.versions.map((v) => (
                      <tr key={v.workflow + '@' + v.version} data-version={v.workflow + '@' + v.version}>
                        <td>{v.workflow}</td>
                        <td class="num">{v.version}</td>
                        <td>{v.queue}</td>
                        <td class="num">{v.in_flight}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </>
            )}
          </>
        )
      )}
    </section>
  );
}

// entryLabel describes one journal entry in words.
function entryLabel(e) {
  switch (e.kind) {
    case 'sleep':
      return e.status === 'pending' && e.until ? `sleeps until ${time(e.until)}` : 'durable sleep';
    case 'signal':
      return e.status === 'pending' ? 'waits for the signal' : e.timed_out ? 'signal timed out' : 'signal received';
    case 'task':
      return `queue task${e.tasks && e.tasks.length > 1 ? 's' : ''}`;
    case 'child':
      return 'child workflow' + (e.children && e.children.length > 1 ? 's' : '');
  }
  return 'step';
}

export function WorkflowRun({ id }) {
  const { data: run, error, loading, reload } = useData(() => api(`/v1/workflows/${enc(id)}`), [id]);
  useLive((ev) => isWorkflowEvent(ev) && ev.aggregate_id === id, reload, 200);
  const me = useWhoami();
  if (loading && !run) return <Loading what="Loading the run" />;
  if (!run) return <ErrorBox error={error} />;
  const over = TERMINAL.includes(run.status);
  const maySignal = me.may('workflow.signal');
  const mayCancel = me.may('workflow.cancel');
  const cancel = async () => {
    const yes = await confirmAction({
      title: 'Cancel run',
      message: `Cancel run ${run.run_id} (${run.workflow} v${run.version}, ${run.status})? Its running step is stopped, no further step starts, and the compensations of its completed steps run in reverse order.`,
      confirmLabel: 'Cancel run',
    });
    if (!yes) return;
    try {
      await api(`/v1/workflows/${enc(run.run_id)}/cancel`, { method: 'POST', body: {} });
      notify(`Run ${run.run_id}: cancel requested.`, 'ok');
      reload();
    } catch (e) {
      notify(`Cancel refused: ${e.message}`, 'error');
    }
  };
  const signals = run.signals || [];
  return (
    <section aria-labelledby="run-title">
      <p class="crumbs">
        <a href={href('/workflows', { workflow: run.workflow })}>Runs of {run.workflow}</a>
      </p>
      <h1 id="run-title">
        Run <span class="mono">{run.run_id}</span> <Badge status={run.status} />
      </h1>
      <ErrorBox error={error} />
      {!over && (
        <div class="bar">
          {mayCancel && !run.cancel_requested && (
            <button type="button" class="secondary" onClick={cancel} data-action="cancel-run">
              Cancel run
            </button>
          )}
          {run.cancel_requested && <span class="muted">Cancel requested: the run stops at its next step.</span>}
        </div>
      )}
      <div class="two-col">
        <div>
          <h2>Steps</h2>
          {run.journal.length === 0 ? (
            <p class="muted">No step yet: the run waits for a pool hosting {run.workflow} v{run.version}.</p>
          ) : (
            <ol class="timeline steps" aria-label={`Journal of run ${run.run_id}`}>
              {run.journal.map((e) => (
                <li key={e.pos} data-kind={e.kind} data-step={e.name} data-status={e.status}>
                  <details>
                    <summary>
                      <span class="ev-type">{e.name}</span> <Badge status={e.status} /> <span class="muted">{entryLabel(e)}</span>
                      {e.attempts > 1 && <span class="muted"> · {e.attempts} attempts</span>} <time dateTime={e.time}>{time(e.time)}</time>
                    </summary>
                    {e.error && <p class="pre">{e.error}</p>}
                    {e.tasks && e.tasks.length > 0 && (
                      <p>
                        Tasks:{' '}
                        {e.tasks.map((t) => (
                          <a key={t} class="mono" href={href('/tasks/' + t)}>
                            {t}{' '}
                          </a>
                        ))}
                      </p>
                    )}
                    {e.children && e.children.length > 0 && (
                      <p>
                        Children:{' '}
                        {e.children.map((c) => (
                          <a key={c} class="mono" href={href('/workflows/' + c)}>
                            {c}{' '}
                          </a>
                        ))}
                      </p>
                    )}
                    {e.result !== undefined && <Payload value={e.result} />}
                  </details>
                </li>
              ))}
            </ol>
          )}
          {!over &&
            (maySignal ? (
              <SignalForm run={run} onSent={reload} />
            ) : (
              me.known && <p class="muted" data-testid="no-signal">{notAllowedText(me, 'signal or cancel this run')}</p>
            ))}
        </div>
        <div>
          <h2>Run</h2>
          <dl class="kv">
            <dt>Workflow</dt>
            <dd>
              {run.workflow} v{run.version}
            </dd>
            <dt>Queue</dt>
            <dd>{run.queue}</dd>
            <dt>Started</dt>
            <dd>{time(run.started)}</dd>
            <dt>Updated</dt>
            <dd>
              {time(run.updated)}
              {over && run.started && <span class="muted"> (took {dur(new Date(run.updated) - new Date(run.started))})</span>}
            </dd>
            {run.parent && (
              <>
                <dt>Parent</dt>
                <dd>
                  <a class="mono" href={href('/workflows/' + run.parent)}>
                    {run.parent}
                  </a>
                </dd>
              </>
            )}
            {run.error && (
              <>
                <dt>Error</dt>
                <dd class="pre">{run.error}</dd>
              </>
            )}
          </dl>
          <h3>Input</h3>
          <Payload value={run.input} />
          {run.status === 'completed' && (
            <>
              <h3>Output</h3>
              <pre class="payload" data-testid="run-output">
                {pretty(run.output)}
              </pre>
            </>
          )}
          <h3>Signals</h3>
          {signals.length === 0 ? (
            <p class="muted">None received.</p>
          ) : (
            <ul class="plain signals">
              {signals.map((s) => (
                <li key={s.index} data-signal={s.name}>
                  <span class="mono">{s.name}</span> <time dateTime={s.time}>{time(s.time)}</time>
                  {s.used ? '' : <span class="muted"> (not used yet)</span>}
                  {s.data !== undefined && <Payload value={s.data} />}
                </li>
              ))}
            </ul>
          )}
        </div>
      </div>
    </section>
  );
}

// SignalForm sends a signal (a name and JSON data) to the run.
function SignalForm({ run, onSent }) {
  const waiting = run.journal.find((e) => e.kind === 'signal' && e.status === 'pending');
  const [problem, setProblem] = useState('');
  const send = async (e) => {
    e.preventDefault();
    const form = e.currentTarget;
    const name = form.elements.name.value.trim();
    const raw = form.elements.data.value.trim();
    let data;
    if (raw !== '') {
      try {
        data = JSON.parse(raw);
      } catch (err) {
        setProblem(`The data is not JSON: ${err.message}`);
        return;
      }
    }
    setProblem('');
    try {
      await api(`/v1/workflows/${enc(run.run_id)}/signal`, { method: 'POST', body: data === undefined ? { name } : { name, data } });
      notify(`Signal ${name} sent to run ${run.run_id}.`, 'ok');
      form.elements.data.value = '';
      onSent();
    } catch (err) {
      setProblem(`Signal refused: ${err.message}`);
    }
  };
  return (
    <form class="signal-form" aria-label="Send a signal" onSubmit={send}>
      <h3>Send a signal</h3>
      <label>
        Name
        <input name="name" required defaultValue={waiting ? waiting.name : ''} placeholder="approve" autocomplete="off" />
      </label>
      <label>
        Data (JSON, optional)
        <textarea name="data" rows="3" placeholder='{"carrier": "ups"}' spellcheck={false} />
      </label>
      {problem && (
        <p class="error" role="alert" data-testid="signal-problem">
          {problem}
        </p>
      )}
      <div class="actions">
        <button type="submit" class="primary" data-action="signal">
          Send signal
        </button>
      </div>
    </form>
  );
}
