// VINE graphs: the list, and one graph drawn as a DAG with its frontier,
// node details (description, decisions, history), collapse by subtree and
// search by id; live.

import { useMemo, useState } from 'preact/hooks';
import { api, enc } from '../api.js';
import { useLive } from '../live.js';
import { href, navigate } from '../router.js';
import { VINE, FRONTIER } from '../status.js';
import { ErrorBox, Loading, useData } from '../components/common.jsx';
import { Dag } from '../components/Dag.jsx';
import { Timeline } from '../components/Timeline.jsx';
import { buildModel, find, initialCollapse, reveal, visible } from '../dag.js';

// DRAW_LIMIT is how many nodes a graph shows at first; larger graphs open
// collapsed (expand, or search, to see more).
const DRAW_LIMIT = 250;

export function Graphs() {
  const { data, error, loading, reload } = useData(() => api('/v1/vine/graphs'), []);
  useLive((ev) => ev.stream === 'TRELLIS_VINE', reload, 1000);
  if (loading && !data) return <Loading what="Loading graphs" />;
  return (
    <section aria-labelledby="graphs-title">
      <h1 id="graphs-title">VINE graphs</h1>
      <ErrorBox error={error} />
      {data && data.length === 0 && (
        <p class="empty">
          No graph yet. <code>trellis vine import plan.vine</code> takes a .vine file under Trellis's care.
        </p>
      )}
      {data && data.length > 0 && (
        <ul class="graph-list">
          {data.map((g) => (
            <li key={g.graph_id} class="card">
              <a href={href('/graphs/' + g.graph_id)}>
                <strong>{g.title || g.path}</strong>
              </a>
              <div class="muted mono">
                {g.graph_id} · {g.path}
              </div>
              <div class="progress" role="progressbar" aria-valuemin="0" aria-valuemax="100" aria-valuenow={g.progress.percentage} aria-label={`${g.title || g.path} progress`}>
                <span style={{ width: g.progress.percentage + '%' }} />
              </div>
              <div class="muted">
                {g.progress.complete} of {g.progress.total} complete · {g.progress.ready_count} ready · root {g.progress.root_status}
              </div>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

export function GraphPage({ id, params }) {
  const { data, error, loading, reload } = useData(() => api(`/v1/vine/graphs/${enc(id)}`), [id]);
  useLive((ev) => ev.stream === 'TRELLIS_VINE' && ev.aggregate_id === id, reload, 300);
  if (loading && !data) return <Loading what="Loading the graph" />;
  if (!data) return <ErrorBox error={error} />;
  return <GraphView key={id} g={data} error={error} selected={params.node || ''} />;
}

function GraphView({ g, error, selected }) {
  const model = useMemo(() => buildModel(g.nodes), [g]);
  const [collapsed, setCollapsed] = useState(() => initialCollapse(model, DRAW_LIMIT));
  const [focus, setFocus] = useState(null);
  const [searchMsg, setSearchMsg] = useState('');
  const view = useMemo(() => visible(model, collapsed), [model, collapsed]);
  const frontier = useMemo(() => {
    const m = new Map();
    for (const [cls, ids] of Object.entries(g.frontier)) for (const x of ids) m.set(x, cls);
    return m;
  }, [g]);
  const select = (nodeID) => navigate('/graphs/' + g.graph_id, { node: nodeID }, true);
  const toggle = (nodeID) => {
    const s = new Set(collapsed);
    s.has(nodeID) ? s.delete(nodeID) : s.add(nodeID);
    setCollapsed(s);
  };
  const search = (text) => {
    const hit = find(model, text);
    if (!hit) {
      setSearchMsg(`No node matches "${text}".`);
      return;
    }
    setSearchMsg(`Found ${hit}.`);
    setCollapsed(reveal(model, collapsed, hit));
    setFocus({ id: hit, at: Date.now() });
    select(hit);
  };
  const hiddenTotal = g.nodes.length - view.nodes.length;
  return (
    <section aria-labelledby="graph-title">
      <p class="crumbs">
        <a href={href('/graphs')}>VINE graphs</a>
      </p>
      <h1 id="graph-title">{g.title || g.path}</h1>
      <p class="muted mono">
        {g.graph_id} · {g.path}
      </p>
      <ErrorBox error={error} />
      <p>
        {g.progress.complete} of {g.progress.total} complete ({g.progress.percentage}%) · {g.frontier.ready_to_start.length} ready to start ·{' '}
        {g.frontier.ready_to_complete.length} ready to complete · {g.frontier.blocked.length} blocked · {g.frontier.needs_expansion.length} to expand
      </p>
      <div class="bar">
        <form role="search" aria-label="Find a node" class="inline" onSubmit={(e) => (e.preventDefault(), search(e.currentTarget.elements.q.value))}>
          <label>
            Find node
            <input name="q" type="search" placeholder="id or name" />
          </label>
          <button type="submit">Find</button>
        </form>
        <button type="button" class="secondary" onClick={() => setCollapsed(new Set())} disabled={collapsed.size === 0}>
          Expand all
        </button>
        <button type="button" class="secondary" onClick={() => setCollapsed(initialCollapse(model, 1))}>
          Collapse all
        </button>
        <span class="muted" role="status">
          {searchMsg} {view.nodes.length} of {g.nodes.length} nodes drawn{hiddenTotal > 0 ? `; ${hiddenTotal} in collapsed subtrees` : ''}.
        </span>
      </div>
      <Legend />
      <div class="graph-layout">
        <Dag
          view={view}
          frontierOf={(nid) => frontier.get(nid)}
          selected={selected}
          focus={focus}
          onSelect={select}
          onToggle={toggle}
          label={`Graph ${g.title || g.path}: ${view.nodes.length} nodes drawn`}
        />
        {selected && <NodePanel graphID={g.graph_id} nodeID={selected} collapsed={collapsed.has(selected)} collapsible={model.children[model.index.get(selected)]?.length > 0} hidden={model.size[model.index.get(selected)] - 1} onToggle={() => toggle(selected)} onSelect={(n) => search(n)} />}
      </div>
    </section>
  );
}

function Legend() {
  return (
    <div class="legend" aria-label="Legend">
      {Object.entries(VINE).map(([s, c]) => (
        <span key={s} class="legend-item">
          <span class="swatch" style={{ background: c }} /> {s}
        </span>
      ))}
      {Object.entries(FRONTIER).map(([k, f]) => (
        <span key={k} class="legend-item">
          <span class={'swatch outline' + (k === 'needs_expansion' ? ' dashed' : '')} style={{ borderColor: f.color }} /> {f.label}
        </span>
      ))}
      <span class="legend-item muted">arrows point to what a task depends on; dashed edges pass through collapsed subtrees</span>
    </div>
  );
}

function NodePanel({ graphID, nodeID, collapsed, collapsible, hidden, onToggle, onSelect }) {
  const { data, error, loading } = useData(async () => {
    const [node, audit] = await Promise.all([api(`/v1/vine/graphs/${enc(graphID)}/nodes/${enc(nodeID)}`), api(`/v1/audit/${enc(graphID + ':' + nodeID)}`)]);
    return { node, events: audit.events };
  }, [graphID, nodeID]);
  return (
    <aside class="node-panel card" aria-labelledby="node-title">
      <h2 id="node-title" class="mono">
        {nodeID}
      </h2>
      <ErrorBox error={error} />
      {loading && !data && <Loading what="Loading the node" />}
      {data && (
        <>
          <p>
            <strong>{data.node.node.shortName}</strong> · {data.node.node.kind === 'ref' ? 'reference to ' + data.node.node.vine : data.node.node.status}
            {data.node.frontier && <> · {FRONTIER[data.node.frontier].label}</>}
          </p>
          {collapsible && (
            <button type="button" class="secondary" onClick={onToggle}>
              {collapsed ? 'Expand' : 'Collapse'} subtree ({hidden} node{hidden === 1 ? '' : 's'})
            </button>
          )}
          {data.node.node.description && <p class="pre">{data.node.node.description}</p>}
          <h3>Decisions</h3>
          {data.node.node.decisions.length ? (
            <ol class="decisions">
              {data.node.node.decisions.map((d, i) => (
                <li key={i}>{d}</li>
              ))}
            </ol>
          ) : (
            <p class="muted">None.</p>
          )}
          <DepList title="Depends on" ids={data.node.node.dependencies} onSelect={onSelect} />
          <DepList title="Needed by" ids={data.node.dependants} onSelect={onSelect} />
          {data.node.node.attachments.length > 0 && (
            <>
              <h3>Attachments</h3>
              <ul class="plain">
                {data.node.node.attachments.map((a, i) => (
                  <li key={i} class="mono">
                    @{a.class} {a.mime} {a.uri}
                  </li>
                ))}
              </ul>
            </>
          )}
          <h3>History</h3>
          <Timeline events={data.events} label={`Events touching ${nodeID}`} />
          <p>
            <a href={href('/events', { stream: 'vine', aggregate: graphID })}>All events of this graph</a>
          </p>
        </>
      )}
    </aside>
  );
}

function DepList({ title, ids, onSelect }) {
  return (
    <>
      <h3>{title}</h3>
      {ids.length === 0 ? (
        <p class="muted">Nothing.</p>
      ) : (
        <ul class="chips">
          {ids.map((d) => (
            <li key={d}>
              <button type="button" class="link mono" onClick={() => onSelect(d)}>
                {d}
              </button>
            </li>
          ))}
        </ul>
      )}
    </>
  );
}

