// An aggregate's events (the audit), each expandable to its payload.

import { Payload } from './common.jsx';
import { time } from '../format.js';

export function Timeline({ events, label = 'Event timeline' }) {
  if (!events || events.length === 0) return <p class="muted">No events.</p>;
  return (
    <ol class="timeline" aria-label={label}>
      {events.map((e) => (
        <li key={e.seq} data-type={e.type}>
          <details>
            <summary>
              <span class="ev-type">{e.type}</span> <span class="muted">#{e.seq}</span>{' '}
              <time dateTime={e.time}>{time(e.time)}</time>
              {e.actor && <span> · by {e.actor}</span>}
            </summary>
            <dl class="kv small">
              <dt>Event id</dt>
              <dd>{e.id}</dd>
              <dt>Subject</dt>
              <dd>{e.subject}</dd>
            </dl>
            <Payload value={e.payload} />
          </details>
        </li>
      ))}
    </ol>
  );
}
