// A VINE graph drawn as a DAG: dagre lays out the visible nodes, the SVG
// is pannable and zoomable (d3-zoom; buttons for keyboards), nodes are
// coloured by status and outlined by frontier class, and every node is a
// focusable button.

import { useEffect, useMemo, useRef } from 'preact/hooks';
import { Graph, layout } from '@dagrejs/dagre';
import { select } from 'd3-selection';
import { zoom, zoomIdentity } from 'd3-zoom';
import { vineColor, FRONTIER } from '../status.js';

const NODE_H = 46;

function nodeWidth(n) {
  const label = Math.max(n.id.length, Math.min((n.shortName || '').length, 28));
  return Math.min(240, Math.max(96, label * 7.4 + 28));
}

function clip(s, n) {
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

export function Dag({ view, frontierOf, selected, focus, onSelect, onToggle, label }) {
  const svgRef = useRef(null);
  const viewRef = useRef(null);
  const zoomRef = useRef(null);

  const laid = useMemo(() => {
    const g = new Graph();
    g.setGraph({ rankdir: 'TB', nodesep: 22, ranksep: 46, marginx: 20, marginy: 20 });
    g.setDefaultEdgeLabel(() => ({}));
    for (const v of view.nodes) g.setNode(v.node.id, { width: nodeWidth(v.node), height: NODE_H });
    for (const e of view.edges) g.setEdge(e.from, e.to);
    layout(g);
    const pos = new Map(view.nodes.map((v) => [v.node.id, g.node(v.node.id)]));
    const edges = view.edges.map((e) => ({ ...e, points: g.edge(e.from, e.to).points }));
    const gl = g.graph();
    return { pos, edges, width: gl.width || 100, height: gl.height || 100 };
  }, [view]);

  const fit = () => {
    const svg = svgRef.current;
    if (!svg || !zoomRef.current) return;
    const w = svg.clientWidth || 800;
    const h = svg.clientHeight || 500;
    const k = Math.max(0.15, Math.min(1.4, Math.min(w / laid.width, h / laid.height)));
    const t = zoomIdentity.translate((w - laid.width * k) / 2, (h - laid.height * k) / 2).scale(k);
    select(svg).call(zoomRef.current.transform, t);
  };

  useEffect(() => {
    const z = zoom()
      .scaleExtent([0.05, 4])
      .on('zoom', (ev) => viewRef.current && viewRef.current.setAttribute('transform', ev.transform.toString()));
    zoomRef.current = z;
    select(svgRef.current).call(z).on('dblclick.zoom', null);
    return () => select(svgRef.current).on('.zoom', null);
  }, []);

  useEffect(fit, [laid.width, laid.height]);

  // Center on the node to focus (after a search).
  useEffect(() => {
    if (!focus || !focus.id) return;
    const p = laid.pos.get(focus.id);
    const svg = svgRef.current;
    if (!p || !svg) return;
    const k = 1;
    const t = zoomIdentity.translate((svg.clientWidth || 800) / 2 - p.x * k, (svg.clientHeight || 500) / 2 - p.y * k).scale(k);
    select(svg).call(zoomRef.current.transform, t);
    const el = svg.querySelector(`g.node[data-id="${CSS.escape(focus.id)}"]`);
    el && el.focus({ preventScroll: true });
  }, [focus, laid]);

  const zoomBy = (f) => select(svgRef.current).call(zoomRef.current.scaleBy, f);

  return (
    <div class="dag-wrap">
      <div class="dag-tools" role="toolbar" aria-label="Graph view">
        <button type="button" onClick={() => zoomBy(1.25)} aria-label="Zoom in">
          +
        </button>
        <button type="button" onClick={() => zoomBy(0.8)} aria-label="Zoom out">
          −
        </button>
        <button type="button" onClick={fit}>
          Fit
        </button>
      </div>
      <svg ref={svgRef} class="dag" role="group" aria-label={label}>
        <defs>
          <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M 0 0 L 10 5 L 0 10 z" fill="#4b5563" />
          </marker>
        </defs>
        <g ref={viewRef}>
          {laid.edges.map((e) => (
            <path
              key={e.from + '>' + e.to}
              class={'edge' + (e.dashed ? ' dashed' : '')}
              d={'M' + e.points.map((p) => `${p.x},${p.y}`).join(' L')}
              marker-end="url(#arrow)"
            />
          ))}
          {view.nodes.map((v) => {
            const n = v.node;
            const p = laid.pos.get(n.id);
            const w = nodeWidth(n);
            const status = n.kind === 'ref' ? 'ref' : n.status;
            const fr = frontierOf(n.id);
            const sel = selected === n.id;
            const desc = `${n.id}: ${n.shortName || ''}, ${status}${fr ? ', ' + FRONTIER[fr].label : ''}${v.collapsed ? `, ${v.hidden} nodes collapsed` : ''}`;
            return (
              <g
                key={n.id}
                class={'node' + (sel ? ' selected' : '') + (fr ? ' frontier' : '')}
                data-id={n.id}
                data-status={status}
                data-frontier={fr || ''}
                transform={`translate(${p.x - w / 2},${p.y - NODE_H / 2})`}
                tabindex="0"
                role="button"
                aria-pressed={sel ? 'true' : 'false'}
                aria-label={desc}
                onClick={() => onSelect(n.id)}
                onDblClick={() => v.collapsible && onToggle(n.id)}
                onKeyDown={(ev) => {
                  if (ev.key === 'Enter' || ev.key === ' ') {
                    ev.preventDefault();
                    onSelect(n.id);
                  } else if ((ev.key === '-' || ev.key === '+') && v.collapsible) {
                    ev.preventDefault();
                    onToggle(n.id);
                  }
                }}
              >
                <title>{desc}</title>
                <rect
                  width={w}
                  height={NODE_H}
                  rx="7"
                  fill={vineColor(status)}
                  stroke={fr ? FRONTIER[fr].color : sel ? '#111827' : '#6b7280'}
                  stroke-width={fr || sel ? 3 : 1}
                  stroke-dasharray={fr === 'needs_expansion' ? '6 3' : undefined}
                />
                <text x="10" y="19" class="node-id">
                  {clip(n.id, 30)}
                </text>
                <text x="10" y="36" class="node-name">
                  {clip(n.shortName || '', 30)}
                </text>
                {v.collapsed && (
                  <text x={w - 8} y="19" class="node-hidden" text-anchor="end">
                    +{v.hidden}
                  </text>
                )}
              </g>
            );
          })}
        </g>
      </svg>
    </div>
  );
}
