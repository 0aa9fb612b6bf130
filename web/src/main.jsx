// The Trellis dashboard: a single page over the HTTP API, live from the
// log through one server-sent event feed.

import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import './style.css';
import { getToken, setToken } from './api.js';
import { useLiveStatus } from './live.js';
import { href, useRoute } from './router.js';
import { ConfirmHost, Notices } from './components/common.jsx';
import { Overview } from './pages/Overview.jsx';
import { Tasks } from './pages/Tasks.jsx';
import { Task } from './pages/Task.jsx';
import { Workers } from './pages/Workers.jsx';
import { GraphPage, Graphs } from './pages/Graphs.jsx';
import { Memory } from './pages/Memory.jsx';
import { Chunk, Search } from './pages/Search.jsx';
import { Events } from './pages/Events.jsx';
import { WorkflowRun, Workflows } from './pages/Workflows.jsx';

const NAV = [
  ['/', 'Overview'],
  ['/tasks', 'Tasks'],
  ['/workers', 'Workers'],
  ['/workflows', 'Workflows'],
  ['/graphs', 'Graphs'],
  ['/memory', 'Memory'],
  ['/search', 'Search'],
  ['/events', 'Events'],
];

function page(route) {
  const [first, second] = route.parts;
  switch (first) {
    case undefined:
      return <Overview />;
    case 'tasks':
      return second ? <Task id={second} /> : <Tasks params={route.params} />;
    case 'workers':
      return <Workers />;
    case 'workflows':
      return second ? <WorkflowRun id={second} /> : <Workflows params={route.params} />;
    case 'graphs':
      return second ? <GraphPage id={second} params={route.params} /> : <Graphs />;
    case 'memory':
      return <Memory params={route.params} />;
    case 'search':
      return <Search params={route.params} />;
    case 'chunks':
      return <Chunk id={second} />;
    case 'events':
      return <Events params={route.params} />;
  }
  return (
    <section>
      <h1>Not found</h1>
      <p>
        No page at {route.path}. <a href="#/">Back to the overview</a>.
      </p>
    </section>
  );
}

function LiveBadge() {
  const s = useLiveStatus();
  const label = { live: 'Live', connecting: 'Connecting', reconnecting: 'Reconnecting', paused: 'Paused (tab hidden)', error: 'Offline' }[s.state] || s.state;
  return (
    <span class={'live-badge ' + s.state} role="status" title={s.detail} data-live={s.state}>
      <span class="dot" aria-hidden="true" />
      {label}
    </span>
  );
}

function TokenDialog() {
  const ref = useRef(null);
  const [open, setOpen] = useState(false);
  useEffect(() => {
    const on = () => setOpen(true);
    window.addEventListener('trellis:unauthorized', on);
    return () => window.removeEventListener('trellis:unauthorized', on);
  }, []);
  useEffect(() => {
    if (open && ref.current && !ref.current.open) ref.current.showModal();
  }, [open]);
  const save = (e) => {
    e.preventDefault();
    setToken(e.currentTarget.elements.token.value.trim());
    ref.current.close();
    setOpen(false);
    location.reload();
  };
  return (
    <dialog ref={ref} aria-labelledby="token-title" onClose={() => setOpen(false)}>
      <form method="dialog" onSubmit={save}>
        <h2 id="token-title">This server asks for a token</h2>
        <p>Paste a Trellis API token. It is kept in this browser tab only and sent as a bearer token with every request.</p>
        <label>
          Token
          <input name="token" type="password" autocomplete="off" defaultValue={getToken()} required />
        </label>
        <div class="actions">
          <button type="submit" class="primary">
            Use token
          </button>
        </div>
      </form>
    </dialog>
  );
}

function App() {
  const route = useRoute();
  const mainRef = useRef(null);
  const section = '/' + (route.parts[0] || '');
  useEffect(() => {
    const title = NAV.find(([p]) => p === section);
    document.title = (title ? title[1] + ' · ' : '') + 'Trellis';
  }, [section]);
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), mainRef.current && mainRef.current.focus())}>
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="#/">
          Trellis
        </a>
        <nav aria-label="Pages">
          <ul>
            {NAV.map(([p, label]) => (
              <li key={p}>
                <a href={href(p)} aria-current={section === p ? 'page' : undefined}>
                  {label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <LiveBadge />
      </header>
      <main id="main" ref={mainRef} tabindex="-1">
        {page(route)}
      </main>
      <Notices />
      <ConfirmHost />
      <TokenDialog />
    </>
  );
}

render(<App />, document.getElementById('app'));
