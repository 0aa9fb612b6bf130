// Events: a live tail of the log across streams with filters, each event
// expandable to its payload; and "as of": the queue board as it stood at
// a chosen time.

import { useEffect, useRef, useState } from 'preact/hooks';
import { navigate, href } from '../router.js';
import { time } from '../format.js';
import { Badge, ErrorBox, Loading, Payload } from '../components/common.jsx';
import { sortStatuses } from '../status.js';
import { boardAsOf, boardNow, openTail } from '../history.js';

const MAX_ROWS = 500;
const STREAMS = ['queue', 'vine', 'tasks', 'memory', 'chunks', 'workflows'];
const SHORT = { TRELLIS_QUEUE: 'queue', TRELLIS_VINE: 'vine', TRELLIS_TASKS: 'tasks', TRELLIS_MEMORY: 'memory', TRELLIS_CHUNKS: 'chunks', TRELLIS_WORKFLOWS: 'workflows' };

// insert adds ev to rows kept newest first (by event time; streams
// deliver their backlogs one after another) and at most MAX_ROWS long.
function insert(rows, ev) {
  const t = Date.parse(ev.time);
  let i = 0;
  while (i < rows.length && Date.parse(rows[i].time) > t) i++;
  const out = rows.slice(0, i);
  out.push(ev, ...rows.slice(i));
  return out.slice(0, MAX_ROWS);
}

function aggLink(ev) {
  const id = ev.aggregate_id;
  if (ev.stream === 'TRELLIS_QUEUE' && /^[0-9A-Z]{26}$/.test(id)) return href('/tasks/' + id);
  if (ev.stream === 'TRELLIS_VINE' && /^g[0-9a-f]{20}$/.test(id)) return href('/graphs/' + id);
  return null;
}

export function Events({ params }) {
  const { stream = '', type = '', actor = '', aggregate = '', since = '' } = params;
  const [rows, setRows] = useState([]);
  const [state, setState] = useState({ s: 'connecting', d: '' });
  const [ready, setReady] = useState(false);
  const [paused, setPaused] = useState(false);
  const pausedRef = useRef(false);
  const held = useRef([]);
  pausedRef.current = paused;

  useEffect(() => {
    setRows([]);
    setReady(false);
    held.current = [];
    const feed = openTail(
      { stream, type, actor, aggregate, since: since ? new Date(since).toISOString() : '' },
      {
        onEvent(ev) {
          if (pausedRef.current) {
            held.current.push(ev);
            return;
          }
          setRows((r) => insert(r, ev));
        },
        onReady: () => setReady(true),
        onStatus: (s, d) => setState({ s, d: d || '' }),
      },
    );
    return () => feed.close();
  }, [stream, type, actor, aggregate, since]);

  const resume = () => {
    const h = held.current.reverse();
    held.current = [];
    setRows((r) => h.reduce(insert, r));
    setPaused(false);
  };
  const submit = (e) => {
    e.preventDefault();
    const f = e.currentTarget.elements;
    navigate('/events', { stream: f.stream.value, type: f.type.value.trim(), actor: f.actor.value.trim(), aggregate: f.aggregate.value.trim(), since: f.since.value }, true);
  };

  return (
    <section aria-labelledby="events-title">
      <h1 id="events-title">Events</h1>
      <form class="filters" role="search" aria-label="Filter events" onSubmit={submit}>
        <label>
          Stream
          <select name="stream" defaultValue={stream}>
            <option value="">all streams</option>
            {STREAMS.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Type
          <input name="type" defaultValue={type} placeholder="claimed,dead" size="12" />
        </label>
        <label>
          Actor
          <input name="actor" defaultValue={actor} size="10" />
        </label>
        <label>
          Aggregate
          <input name="aggregate" defaultValue={aggregate} placeholder="task or graph id" />
        </label>
        <label>
          From
          <input name="since" type="datetime-local" step="1" defaultValue={since} aria-describedby="since-help" />
        </label>
        <button type="submit">Apply</button>
        <span id="since-help" class="muted small">
          Empty: the last 100 events of each stream, then live.
        </span>
      </form>
      <div class="bar">
        <span class={'live-state ' + state.s} role="status" data-testid="tail-state">
          {state.s === 'live' ? (ready ? 'live' : 'catching up') : state.s}
          {state.d ? ': ' + state.d : ''}
        </span>
        {paused ? (
          <button type="button" onClick={resume}>
            Resume ({held.current.length} waiting)
          </button>
        ) : (
          <button type="button" class="secondary" onClick={() => setPaused(true)}>
            Pause
          </button>
        )}
        <span class="muted">
          {rows.length} shown{rows.length === MAX_ROWS ? ' (the newest ' + MAX_ROWS + ')' : ''}
        </span>
      </div>
      <ol class="tail" aria-label="Events, newest first" aria-live="off">
        {rows.map((ev) => {
          const link = aggLink(ev);
          return (
            <li key={ev.stream + ev.seq} data-type={ev.type} data-stream={SHORT[ev.stream] || ev.stream}>
              <details>
                <summary>
                  <time dateTime={ev.time}>{time(ev.time)}</time> <span class="stream">{SHORT[ev.stream] || ev.stream}</span> <span class="ev-type">{ev.type}</span>{' '}
                  {link ? (
                    <a class="mono" href={link}>
                      {ev.aggregate_id}
                    </a>
                  ) : (
                    <span class="mono">{ev.aggregate_id}</span>
                  )}
                  {ev.actor && <span class="muted"> by {ev.actor}</span>} <span class="muted">#{ev.seq}</span>
                </summary>
                <p class="muted small mono">{ev.subject}</p>
                {ev.payload_omitted ? (
                  <p class="muted">
                    Payload of {ev.payload_bytes} bytes not sent with the tail; the aggregate's audit (<code>GET /v1/audit/{ev.aggregate_id}</code>) has it.
                  </p>
                ) : (
                  <Payload value={ev.payload} />
                )}
              </details>
            </li>
          );
        })}
      </ol>
      <AsOf />
    </section>
  );
}

function localInput(d) {
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

function AsOf() {
  const [at, setAt] = useState(() => localInput(new Date(Date.now() - 15 * 60e3)));
  const [res, setRes] = useState(null);
  const [err, setErr] = useState(null);
  const [busy, setBusy] = useState(false);
  const show = async (e) => {
    e && e.preventDefault();
    setBusy(true);
    setErr(null);
    try {
      const iso = new Date(at).toISOString();
      const [then, now] = await Promise.all([boardAsOf(iso, { limit: 100 }), boardNow()]);
      setRes({ iso, then, now });
    } catch (x) {
      setErr(x);
    } finally {
      setBusy(false);
    }
  };
  const queues = res ? [...new Set([...Object.keys(res.then.counts), ...Object.keys(res.now.counts)])].sort() : [];
  const statuses = res ? sortStatuses([...Object.values(res.then.counts), ...Object.values(res.now.counts)].flatMap((c) => Object.keys(c))) : [];
  return (
    <section class="as-of" aria-labelledby="asof-title">
      <h2 id="asof-title">The board as of a time</h2>
      <form class="filters" onSubmit={show}>
        <label>
          As of (your local time)
          <input name="at" type="datetime-local" step="1" value={at} onInput={(e) => setAt(e.currentTarget.value)} required />
        </label>
        <button type="submit" disabled={busy}>
          Show the board then
        </button>
      </form>
      <ErrorBox error={err} />
      {busy && <Loading what="Folding the log up to then" />}
      {res && (
        <>
          <div class="table-wrap">
            <table class="as-of-counts">
              <caption>
                Tasks per queue and status at {time(res.iso)} (then → now)
              </caption>
              <thead>
                <tr>
                  <th scope="col">Queue</th>
                  {statuses.map((s) => (
                    <th scope="col" key={s}>
                      <Badge status={s} />
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {queues.map((q) => (
                  <tr key={q} data-queue={q}>
                    <th scope="row">{q}</th>
                    {statuses.map((s) => (
                      <td key={s} class="num" data-then={s}>
                        {(res.then.counts[q] || {})[s] || 0} → {(res.now.counts[q] || {})[s] || 0}
                      </td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {queues.length === 0 && <p class="empty">The queue had no task then.</p>}
          {res.then.tasks.length > 0 && (
            <details>
              <summary>
                The first {res.then.tasks.length} tasks then{res.then.next_cursor ? ' (more exist)' : ''}
              </summary>
              <ul class="plain">
                {res.then.tasks.map((t) => (
                  <li key={t.task_id}>
                    <Badge status={t.status} />{' '}
                    <a class="mono" href={href('/tasks/' + t.task_id)}>
                      {t.task_id}
                    </a>{' '}
                    {t.objective}
                  </li>
                ))}
              </ul>
            </details>
          )}
        </>
      )}
    </section>
  );
}
