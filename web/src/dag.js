// The VINE graph model for drawing: the dominator tree of the dependency
// graph (from the root), which defines what "collapse a subtree" hides,
// and the visible nodes and edges for a set of collapsed nodes.
//
// Edges go from a task to what it depends on. Node d dominates node n when
// every path from the root to n passes through d; collapsing d hides every
// node it dominates, so no hidden node is reachable from the root except
// through a visible, collapsed one. Edges that touch hidden nodes are
// redrawn, dashed, from and to the collapsed node hiding them.

export function buildModel(nodes) {
  const n = nodes.length;
  const index = new Map(nodes.map((x, i) => [x.id, i]));
  const succ = nodes.map((x) => (x.dependencies || []).map((d) => index.get(d)).filter((i) => i !== undefined));
  const preds = nodes.map(() => []);
  succ.forEach((s, i) => s.forEach((j) => preds[j].push(i)));

  // Depth-first postorder from the root (node 0), iteratively.
  const post = new Array(n).fill(-1);
  const order = [];
  if (n > 0) {
    const seen = new Uint8Array(n);
    const stack = [[0, 0]];
    seen[0] = 1;
    while (stack.length) {
      const top = stack[stack.length - 1];
      const [v, k] = top;
      if (k < succ[v].length) {
        top[1]++;
        const w = succ[v][k];
        if (!seen[w]) {
          seen[w] = 1;
          stack.push([w, 0]);
        }
      } else {
        post[v] = order.length;
        order.push(v);
        stack.pop();
      }
    }
  }
  const rpo = order.slice().reverse();

  // Cooper, Harvey & Kennedy's iterative dominator algorithm.
  const idom = new Array(n).fill(-1);
  if (n > 0) idom[0] = 0;
  const intersect = (a, b) => {
    while (a !== b) {
      while (post[a] < post[b]) a = idom[a];
      while (post[b] < post[a]) b = idom[b];
    }
    return a;
  };
  for (let changed = true; changed; ) {
    changed = false;
    for (const b of rpo) {
      if (b === 0) continue;
      let d = -1;
      for (const p of preds[b]) {
        if (post[p] < 0 || idom[p] < 0) continue;
        d = d < 0 ? p : intersect(p, d);
      }
      if (d >= 0 && idom[b] !== d) {
        idom[b] = d;
        changed = true;
      }
    }
  }

  // The dominator tree; nodes the root does not reach are roots of their own.
  const children = nodes.map(() => []);
  const roots = [];
  for (let i = 0; i < n; i++) {
    if (i === 0 || idom[i] < 0) roots.push(i);
    else children[idom[i]].push(i);
  }
  const depth = new Array(n).fill(0);
  const size = new Array(n).fill(1);
  const stack = roots.map((r) => [r, false]);
  while (stack.length) {
    const [v, done] = stack.pop();
    if (done) {
      for (const c of children[v]) size[v] += size[c];
      continue;
    }
    stack.push([v, true]);
    for (const c of children[v]) {
      depth[c] = depth[v] + 1;
      stack.push([c, false]);
    }
  }
  return { nodes, index, succ, idom, children, roots, depth, size };
}

// visible returns the drawn nodes and edges for the collapsed ids:
// {nodes: [{node, hidden}], edges: [{from, to, dashed}], hiddenBy}.
export function visible(model, collapsed) {
  const { nodes, succ, children, roots } = model;
  const rep = new Array(nodes.length).fill(-1);
  const out = [];
  const stack = roots.slice().reverse();
  while (stack.length) {
    const v = stack.pop();
    rep[v] = v;
    const isCollapsed = collapsed.has(nodes[v].id) && children[v].length > 0;
    out.push({ node: nodes[v], i: v, hidden: isCollapsed ? model.size[v] - 1 : 0, collapsible: children[v].length > 0, collapsed: isCollapsed });
    if (isCollapsed) {
      const sub = children[v].slice();
      while (sub.length) {
        const h = sub.pop();
        rep[h] = v;
        sub.push(...children[h]);
      }
    } else {
      for (let k = children[v].length - 1; k >= 0; k--) stack.push(children[v][k]);
    }
  }
  const edges = new Map();
  succ.forEach((deps, u) => {
    for (const w of deps) {
      const a = rep[u];
      const b = rep[w];
      if (a < 0 || b < 0 || a === b) continue;
      const dashed = a !== u || b !== w;
      const key = a + '>' + b;
      const prev = edges.get(key);
      if (!prev) edges.set(key, { from: nodes[a].id, to: nodes[b].id, dashed });
      else if (!dashed) prev.dashed = false;
    }
  });
  // Keep graph order, so the layout is stable.
  out.sort((x, y) => x.i - y.i);
  return { nodes: out, edges: [...edges.values()], rep };
}

// initialCollapse picks what to collapse so that at most limit nodes are
// drawn: every collapsible node at the deepest dominator depth that keeps
// the count under the limit.
export function initialCollapse(model, limit) {
  const n = model.nodes.length;
  if (n <= limit) return new Set();
  const byDepth = [];
  model.depth.forEach((d) => (byDepth[d] = (byDepth[d] || 0) + 1));
  let d = 0;
  let count = byDepth[0] || 0;
  while (d + 1 < byDepth.length && count + byDepth[d + 1] <= limit) {
    d++;
    count += byDepth[d];
  }
  const out = new Set();
  model.depth.forEach((dep, i) => {
    if (dep === d && model.children[i].length > 0) out.add(model.nodes[i].id);
  });
  return out;
}

// reveal returns collapsed without the dominator ancestors of id, so that
// id is drawn.
export function reveal(model, collapsed, id) {
  const i = model.index.get(id);
  if (i === undefined) return collapsed;
  const out = new Set(collapsed);
  for (let v = model.idom[i]; v >= 0; v = v === model.idom[v] ? -1 : model.idom[v]) out.delete(model.nodes[v].id);
  return out;
}

// find returns the id of the node matching text: the exact id, else the
// first node whose id or name contains it (ignoring case).
export function find(model, text) {
  const t = text.trim();
  if (!t) return null;
  if (model.index.has(t)) return t;
  const lower = t.toLowerCase();
  const hit = model.nodes.find((x) => x.id.toLowerCase().includes(lower) || (x.shortName || '').toLowerCase().includes(lower));
  return hit ? hit.id : null;
}
