// Agent memory: tasks with their objectives and agents, facts by branch
// with confidence and category, and the consolidation history; live.

import { api, query } from '../api.js';
import { useLive } from '../live.js';
import { navigate } from '../router.js';
import { time } from '../format.js';
import { Badge, ErrorBox, Loading, useData } from '../components/common.jsx';

const OBJ = { todo: 'queued', active: 'claimed', done: 'done', blocked: 'failed' };

export function Memory({ params }) {
  const { branch = '', status = 'active', category = '', q = '' } = params;
  const tasks = useData(() => api('/tasks'), []);
  const facts = useData(() => api('/v1/memory/facts' + query({ branch, status, category, query: q })), [branch, status, category, q]);
  const history = useData(() => api('/v1/memory/history'), []);
  useLive(
    (ev) => ev.stream === 'TRELLIS_MEMORY' || ev.stream === 'TRELLIS_TASKS',
    () => (tasks.reload(), facts.reload(), history.reload()),
    800,
  );
  const set = (changes) => navigate('/memory', { branch, status, category, q, ...changes }, true);
  const byBranch = {};
  for (const f of facts.data || []) (byBranch[f.branch] = byBranch[f.branch] || []).push(f);
  const categories = [...new Set((facts.data || []).map((f) => f.category).concat(category ? [category] : []))].sort();
  return (
    <section aria-labelledby="memory-title">
      <h1 id="memory-title">Agent memory</h1>
      <h2>Tasks</h2>
      <ErrorBox error={tasks.error} />
      {tasks.loading && !tasks.data && <Loading what="Loading tasks" />}
      {tasks.data && tasks.data.length === 0 && <p class="empty">No agent task yet (trellis task create).</p>}
      <div class="cards">
        {(tasks.data || []).map((t) => (
          <article key={t.task_id} class="card" data-agent-task={t.name}>
            <h3>
              {t.name} <Badge status={t.status === 'completed' ? 'done' : 'claimed'}>{t.status}</Badge>
            </h3>
            {t.description && <p>{t.description}</p>}
            <p class="muted mono">branch {t.branch}</p>
            <h4>Objectives</h4>
            <ul class="plain">
              {t.objectives.map((o) => (
                <li key={o.objective_id}>
                  <Badge status={OBJ[o.status] || o.status}>{o.status}</Badge> {o.description}
                  {o.agent_id && <span class="muted"> · {o.agent_id}</span>}
                </li>
              ))}
            </ul>
            <h4>Agents</h4>
            {t.agents.length === 0 ? (
              <p class="muted">None joined.</p>
            ) : (
              <ul class="plain">
                {t.agents.map((a) => (
                  <li key={a.agent_id}>
                    <strong>{a.agent_id}</strong> ({a.role}){a.completed ? ' · completed' : ' · working'}
                    {a.summary && <div class="muted">{a.summary}</div>}
                  </li>
                ))}
              </ul>
            )}
            <button type="button" class="link" onClick={() => set({ branch: t.branch })}>
              Facts on {t.branch}
            </button>
          </article>
        ))}
      </div>

      <h2>Facts</h2>
      <form class="filters" role="search" aria-label="Filter facts" onSubmit={(e) => (e.preventDefault(), set({ q: e.currentTarget.elements.q.value, branch: e.currentTarget.elements.branch.value }))}>
        <label>
          Branch
          <input name="branch" defaultValue={branch} placeholder="any branch" />
        </label>
        <label>
          Status
          <select value={status} onChange={(e) => set({ status: e.currentTarget.value })}>
            {['active', 'superseded', 'archived'].map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Category
          <select value={category} onChange={(e) => set({ category: e.currentTarget.value })}>
            <option value="">any</option>
            {categories.map((c) => (
              <option key={c} value={c}>
                {c}
              </option>
            ))}
          </select>
        </label>
        <label class="grow">
          Text
          <input name="q" type="search" defaultValue={q} placeholder="words in the fact" />
        </label>
        <button type="submit">Filter</button>
      </form>
      <ErrorBox error={facts.error} />
      {facts.data && facts.data.length === 0 && <p class="empty">No fact matches.</p>}
      {Object.entries(byBranch)
        .sort()
        .map(([b, list]) => (
          <div key={b} class="branch" data-branch={b}>
            <h3 class="mono">{b}</h3>
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Fact</th>
                    <th scope="col">Category</th>
                    <th scope="col">Confidence</th>
                    <th scope="col">Source</th>
                    <th scope="col">Updated</th>
                  </tr>
                </thead>
                <tbody>
                  {list.map((f) => (
                    <tr key={f.fact_id} data-fact={f.fact_id}>
                      <td>{f.fact_text}</td>
                      <td>{f.category}</td>
                      <td>
                        <meter min="0" max="1" value={f.confidence} aria-label={`confidence ${f.confidence}`} /> {f.confidence.toFixed(2)}
                      </td>
                      <td class="muted">{[f.agent_id, f.session].filter(Boolean).join(' · ')}</td>
                      <td>{time(f.updated_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </div>
        ))}

      <h2>Consolidation history</h2>
      <ErrorBox error={history.error} />
      {history.data && history.data.length === 0 && <p class="empty">No consolidation has run yet.</p>}
      {history.data && history.data.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Run</th>
                <th scope="col">From → to</th>
                <th scope="col">Observations</th>
                <th scope="col">Created / updated / dedup / superseded</th>
                <th scope="col">Summary</th>
              </tr>
            </thead>
            <tbody>
              {history.data
                .slice()
                .reverse()
                .map((r) => (
                  <tr key={r.run_id}>
                    <td>{r.type}</td>
                    <td class="mono">
                      {r.source_branch} → {r.target_branch}
                    </td>
                    <td class="num">{r.observations_processed}</td>
                    <td class="num">
                      {r.facts_created} / {r.facts_updated} / {r.facts_deduplicated} / {r.facts_superseded}
                    </td>
                    <td>{r.summary}</td>
                  </tr>
                ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
