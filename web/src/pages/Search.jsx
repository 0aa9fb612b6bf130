// Code search: a query over the chunk index with filters, results in the
// citation format, and a chunk page with its source.

import { api, enc } from '../api.js';
import { href, navigate } from '../router.js';
import { ErrorBox, Loading, useData } from '../components/common.jsx';

const TYPES = ['', 'function', 'method', 'class', 'type', 'module', 'section', 'file'];

export function Search({ params }) {
  const { q = '', path_prefix = '', file_type = '', chunk_type = '', repo = '', tag = '', k = '8' } = params;
  const { data, error, loading } = useData(
    () => (q ? api('/v1/code/search', { method: 'POST', body: { query: q, k: Number(k) || 8, path_prefix, file_type, chunk_type, repo, tag } }) : Promise.resolve(null)),
    [q, path_prefix, file_type, chunk_type, repo, tag, k],
  );
  const submit = (e) => {
    e.preventDefault();
    const f = e.currentTarget.elements;
    navigate('/search', {
      q: f.q.value,
      path_prefix: f.path_prefix.value,
      file_type: f.file_type.value,
      chunk_type: f.chunk_type.value,
      repo: f.repo.value,
      tag: f.tag.value,
      k: f.k.value,
    });
  };
  return (
    <section aria-labelledby="search-title">
      <h1 id="search-title">Code search</h1>
      <form class="filters" role="search" aria-label="Search code" onSubmit={submit}>
        <label class="grow">
          Query
          <input name="q" type="search" defaultValue={q} placeholder="how do tools register?" required />
        </label>
        <label>
          Path prefix
          <input name="path_prefix" defaultValue={path_prefix} placeholder="pkg/" />
        </label>
        <label>
          File type
          <input name="file_type" defaultValue={file_type} placeholder=".go" size="6" />
        </label>
        <label>
          Chunk type
          <select name="chunk_type" defaultValue={chunk_type}>
            {TYPES.map((t) => (
              <option key={t} value={t}>
                {t || 'any'}
              </option>
            ))}
          </select>
        </label>
        <label>
          Repo
          <input name="repo" defaultValue={repo} size="10" />
        </label>
        <label>
          Tag
          <input name="tag" defaultValue={tag} size="8" />
        </label>
        <label>
          Results
          <input name="k" type="number" min="1" max="50" defaultValue={k} size="3" />
        </label>
        <button type="submit">Search</button>
      </form>
      <ErrorBox error={error} />
      {loading && q && <Loading what="Searching" />}
      {data && <Results data={data} />}
    </section>
  );
}

function Results({ data }) {
  if (data.not_found || data.results.length === 0) {
    return (
      <div class="not-found" role="status">
        <p>Nothing found for “{data.query}”.</p>
        {data.suggestions && data.suggestions.length > 0 && (
          <>
            <p>Try:</p>
            <ul class="chips">
              {data.suggestions.map((s) => (
                <li key={s}>
                  <a href={href('/search', { q: s })}>{s}</a>
                </li>
              ))}
            </ul>
          </>
        )}
      </div>
    );
  }
  return (
    <div class="results" aria-label="Results">
      <p role="status">
        Found {data.results.length} chunk{data.results.length === 1 ? '' : 's'} matching '{data.query}':
      </p>
      <ol class="citations">
        {data.results.map((r, i) => (
          <li key={r.chunk_id} data-chunk={r.chunk_id}>
            <pre class="citation">
              [{i + 1}] CHUNK_ID: <a href={href('/chunks/' + r.chunk_id)}>{r.chunk_id}</a>
              {'\n    '}Source: {r.source_path} (lines {r.start_line}-{r.end_line})
              {'\n    '}Type: {r.chunk_type}
              {r.name ? ` (${r.name})` : ''}
              {'\n    '}Snippet: {(r.snippet || '').replaceAll('\n', '\n        ')}
            </pre>
          </li>
        ))}
      </ol>
      <p class="muted">CITATION RULE: Always reference chunks by ID in your answer.</p>
    </div>
  );
}

export function Chunk({ id }) {
  const { data, error, loading } = useData(() => api(`/v1/code/chunks/${enc(id)}`), [id]);
  if (loading && !data) return <Loading what="Loading the chunk" />;
  if (!data) return <ErrorBox error={error} />;
  const lines = (data.content || '').split('\n');
  return (
    <section aria-labelledby="chunk-title">
      <p class="crumbs">
        <a href="#" onClick={(e) => (e.preventDefault(), history.back())}>
          Back to the results
        </a>
      </p>
      <h1 id="chunk-title" class="mono">
        {data.chunk_id}
      </h1>
      <dl class="kv">
        <dt>Source</dt>
        <dd class="mono">
          {data.repo ? data.repo + ': ' : ''}
          {data.source_path} (lines {data.start_line}-{data.end_line})
        </dd>
        <dt>Type</dt>
        <dd>
          {data.chunk_type}
          {data.name ? ` (${data.name})` : ''} · {data.language}
        </dd>
        {data.tags && data.tags.length > 0 && (
          <>
            <dt>Tags</dt>
            <dd>{data.tags.join(', ')}</dd>
          </>
        )}
      </dl>
      <pre class="source" aria-label={`Source of ${data.source_path}`}>
        {lines.map((l, i) => (
          <div key={i} class="line">
            <span class="ln" aria-hidden="true">
              {data.start_line + i}
            </span>
            {l || ' '}
          </div>
        ))}
      </pre>
    </section>
  );
}
