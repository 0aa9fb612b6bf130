// Workers: who holds which task and since when, and each worker's rate
// over the last hour, derived from the log; what the log cannot tell is
// said, not guessed.

import { api } from '../api.js';
import { useLive } from '../live.js';
import { href } from '../router.js';
import { ago, time } from '../format.js';
import { ErrorBox, Loading, useData } from '../components/common.jsx';

export function Workers() {
  const { data, error, loading, reload } = useData(() => api('/v1/queue/workers'), []);
  useLive((ev) => ev.stream === 'TRELLIS_QUEUE', reload, 1000);
  if (loading && !data) return <Loading what="Loading workers" />;
  return (
    <section aria-labelledby="workers-title">
      <h1 id="workers-title">Workers</h1>
      <ErrorBox error={error} />
      {data && (
        <>
          <p class="muted">
            {data.holders} claimed task{data.holders === 1 ? '' : 's'}
            {data.truncated ? ' (the first 1000)' : ''}; rates over the hour since {time(data.start)}.
          </p>
          {data.workers.length === 0 ? (
            <p class="empty">No worker holds a task or did anything in the last hour.</p>
          ) : (
            <div class="table-wrap">
              <table class="workers">
                <thead>
                  <tr>
                    <th scope="col">Worker</th>
                    <th scope="col">Queues</th>
                    <th scope="col">Holds</th>
                    <th scope="col">Finished (1 h)</th>
                    <th scope="col">Per minute (1 h / 5 min)</th>
                    <th scope="col">Last event</th>
                  </tr>
                </thead>
                <tbody>
                  {data.workers.map((w) => (
                    <tr key={w.worker} data-worker={w.worker}>
                      <th scope="row" class="mono">
                        {w.worker}
                      </th>
                      <td>{(w.queues || []).join(', ')}</td>
                      <td>
                        {(w.held || []).length === 0 ? (
                          <span class="muted">nothing</span>
                        ) : (
                          <ul class="plain">
                            {w.held.map((h) => (
                              <li key={h.task_id} data-held={h.task_id}>
                                <a class="mono" href={href('/tasks/' + h.task_id)}>
                                  {h.task_id}
                                </a>{' '}
                                <span class="muted">
                                  {h.leased ? `leased${h.lease_seconds ? ' ' + h.lease_seconds + 's' : ''}, delivery ${h.delivery}` : 'claimed (queue next)'}
                                  {h.claimed_at && <>, since {ago(h.claimed_at)}</>}, attempt {h.attempt}
                                </span>
                              </li>
                            ))}
                          </ul>
                        )}
                      </td>
                      <td class="num">{w.finished}</td>
                      <td class="num">
                        {w.per_minute} / {w.per_minute_recent}
                      </td>
                      <td>
                        {w.last_event ? (
                          <>
                            {w.last_event}{' '}
                            <time dateTime={w.last_seen} title={time(w.last_seen)}>
                              {ago(w.last_seen)}
                            </time>
                          </>
                        ) : (
                          <span class="muted">none in the window</span>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <h2>Not derivable from the log</h2>
          <ul class="not-derived">
            {data.not_derived.map((s, i) => (
              <li key={i}>{s}</li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}
