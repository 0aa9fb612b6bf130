// Overview: every queue's counts by status, its controls, its dead
// letters, and the last hour's throughput and claim latency; live.

import { api, enc } from '../api.js';
import { useLive } from '../live.js';
import { href } from '../router.js';
import { sortStatuses } from '../status.js';
import { ms, sum } from '../format.js';
import { Badge, ErrorBox, Loading, confirmAction, notify, useData } from '../components/common.jsx';
import { Chart } from '../components/Chart.jsx';
import { retryAllDead } from './bulk.js';
import { useWhoami } from '../whoami.js';

async function loadOverview() {
  const [list, activity] = await Promise.all([api('/v1/queue/tasks?limit=1'), api('/v1/queue/activity')]);
  const names = [...new Set([...Object.keys(list.counts || {}), ...Object.keys(activity.queues || {})])].sort();
  return { counts: list.counts || {}, activity, names };
}

async function loadControls(names) {
  const controls = {};
  await Promise.all(
    names.map(async (q) => {
      try {
        controls[q] = await api(`/v1/queues/${enc(q)}/controls`);
      } catch {
        controls[q] = null;
      }
    }),
  );
  return controls;
}

// isControl reports whether ev changed a queue's controls
// (trellis.queue.<queue>._control.<type>).
const isControl = (ev) => ev.stream === 'TRELLIS_QUEUE' && ev.subject.includes('._control.');

export function Overview() {
  const { data, error, loading, reload } = useData(loadOverview, []);
  const names = data ? data.names.join(',') : '';
  const controls = useData(() => loadControls(names ? names.split(',') : []), [names]);
  useLive((ev) => ev.stream === 'TRELLIS_QUEUE' && !isControl(ev), reload, 700);
  useLive(isControl, controls.reload, 300);
  const me = useWhoami();
  if (loading && !data) return <Loading what="Loading the queues" />;
  return (
    <section aria-labelledby="overview-title">
      <h1 id="overview-title">Overview</h1>
      <ErrorBox error={error} />
      {data && data.names.length === 0 && (
        <p class="empty">
          No queue has any task yet. Add one with <code>trellis queue add --objective "…"</code> or{' '}
          <code>POST /v1/queue/tasks</code>; it appears here at once.
        </p>
      )}
      {data && <Totals data={data} />}
      <div class="cards">
        {data &&
          data.names.map((q) => (
            <QueueCard key={q} name={q} counts={data.counts[q] || {}} series={data.activity.queues[q]} activity={data.activity} controls={controls.data && controls.data[q]} onChange={reload} me={me} onControl={controls.reload} />
          ))}
      </div>
      {data && !data.activity.caught_up && <p class="muted">The activity charts are still reading the last hour of the log…</p>}
    </section>
  );
}

function Totals({ data }) {
  const total = {};
  for (const c of Object.values(data.counts)) for (const [s, n] of Object.entries(c)) total[s] = (total[s] || 0) + n;
  const statuses = sortStatuses(Object.keys(total));
  return (
    <div class="totals" aria-label="All queues">
      {statuses.map((s) => (
        <a key={s} class="total" href={href('/tasks', { status: s })} data-status={s}>
          <span class="total-n" data-testid={'total-' + s}>
            {total[s]}
          </span>
          <Badge status={s} />
        </a>
      ))}
    </div>
  );
}

// control pauses or resumes a queue after a confirmation.
async function control(name, action, done) {
  const yes = await confirmAction({
    title: action === 'pause' ? 'Pause queue' : 'Resume queue',
    message:
      action === 'pause'
        ? `Pause queue ${name}? Workers claim nothing from it until it is resumed; tasks already claimed go on.`
        : `Resume queue ${name}? Workers claim from it again.`,
    confirmLabel: action === 'pause' ? 'Pause' : 'Resume',
  });
  if (!yes) return;
  try {
    await api(`/v1/queues/${enc(name)}/controls`, { method: 'POST', body: { action } });
    notify(`Queue ${name} ${action === 'pause' ? 'paused' : 'resumed'}.`, 'ok');
    done();
  } catch (e) {
    notify(`${action === 'pause' ? 'Pause' : 'Resume'} refused: ${e.message}`, 'error');
  }
}

function QueueCard({ name, counts, series, activity, controls, onChange, me, onControl }) {
  const statuses = sortStatuses(Object.keys(counts));
  const dead = counts.dead || 0;
  const xs = Array.from({ length: activity.buckets }, (_, i) => Date.parse(activity.start) / 1000 + i * activity.bucket_seconds);
  const zeros = () => new Array(activity.buckets).fill(0);
  const ev = (series && series.events) || {};
  const finished = zeros().map((_, i) => ((ev.completed || [])[i] || 0));
  const failed = zeros().map((_, i) => ((ev.failed || [])[i] || 0) + ((ev.dead || [])[i] || 0) + ((ev.attempt_failed || [])[i] || 0));
  const added = ev.added || zeros();
  const p50 = (series && series.claim_p50_ms) || new Array(activity.buckets).fill(null);
  const p95 = (series && series.claim_p95_ms) || new Array(activity.buckets).fill(null);
  const lastP50 = [...p50].reverse().find((v) => v !== null);
  return (
    <article class="card queue-card" data-queue={name} aria-labelledby={'q-' + name}>
      <header>
        <h2 id={'q-' + name}>
          <a href={href('/tasks', { queue: name })}>{name}</a>
        </h2>
        <QueueState controls={controls} />
        {controls && me.may('queue.control') && (
          <button type="button" class="small" data-action={controls.paused ? 'resume' : 'pause'} onClick={() => control(name, controls.paused ? 'resume' : 'pause', onControl)}>
            {controls.paused ? 'Resume' : 'Pause'} {name}
          </button>
        )}
      </header>
      <ul class="counts" aria-label={`Tasks in ${name} by status`}>
        {statuses.map((s) => (
          <li key={s}>
            <a href={href('/tasks', { queue: name, status: s })}>
              <Badge status={s} /> <span class="count" data-count={s}>{counts[s]}</span>
            </a>
          </li>
        ))}
      </ul>
      {dead > 0 && (
        <p class="dead-letters">
          <a href={href('/tasks', { queue: name, status: 'dead' })}>
            {dead} dead letter{dead === 1 ? '' : 's'}
          </a>{' '}
          {me.may('queue.retry') && (
            <button type="button" class="small" onClick={() => retryAllDead(name).then(onChange)}>
              Retry all dead in {name}
            </button>
          )}
        </p>
      )}
      <Chart
        title="Tasks per minute, last hour"
        xs={xs}
        yLabel="per min"
        series={[
          { label: 'added', values: added, color: '#2563eb' },
          { label: 'completed', values: finished, color: '#15803d' },
          { label: 'failed', values: failed, color: '#b91c1c' },
        ]}
        summary={`${sum(added)} added, ${sum(finished)} completed, ${sum(failed)} failed in the last hour`}
      />
      {lastP50 === undefined ? (
        <p class="muted small">No claim in the last hour, so no claim latency.</p>
      ) : (
        <Chart
          title="Claim latency"
          xs={xs}
          yLabel="ms"
          series={[
            { label: 'p50', values: p50, color: '#7c3aed' },
            { label: 'p95', values: p95, color: '#c2410c', dash: [5, 3] },
          ]}
          summary={`latest median ${ms(lastP50)}`}
        />
      )}
    </article>
  );
}

function QueueState({ controls }) {
  if (!controls) return null;
  return (
    <p class="queue-state">
      {controls.paused ? (
        <span class="state paused" data-state="paused">
          paused
        </span>
      ) : (
        <span class="state running" data-state="running">
          running
        </span>
      )}
      {controls.max_in_flight > 0 && <span class="state limited"> limit {controls.max_in_flight} in flight</span>}
      {controls.lease_seconds > 0 && <span class="muted"> · lease {controls.lease_seconds}s</span>}
      {controls.rate && <span class="state limited"> rate {controls.rate}</span>}
    </p>
  );
}
