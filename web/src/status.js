// Colours for statuses. Known statuses have fixed colours; any other
// status the log holds (new ones come with new Trellis versions) gets a
// stable pale colour from its name. Every pair keeps text at a contrast
// ratio of at least 4.5:1 (the browser test checks it).

const TASK = {
  queued: ['#dbeafe', '#1e3a8a'],
  claimed: ['#fef3c7', '#78350f'],
  done: ['#dcfce7', '#14532d'],
  failed: ['#fee2e2', '#7f1d1d'],
  dead: ['#3f3f46', '#ffffff'],
  scheduled: ['#ede9fe', '#4c1d95'],
  waiting: ['#f1f5f9', '#334155'],
  cancelled: ['#e5e7eb', '#374151'],
  // Workflow runs and their journal entries.
  running: ['#fef3c7', '#78350f'],
  sleeping: ['#ede9fe', '#4c1d95'],
  completed: ['#dcfce7', '#14532d'],
  pending: ['#f1f5f9', '#334155'],
};

// The order statuses are shown in; unknown ones follow, by name.
export const TASK_ORDER = ['scheduled', 'waiting', 'queued', 'claimed', 'done', 'failed', 'dead', 'cancelled'];

export const VINE = {
  notstarted: '#e5e7eb',
  planning: '#c7d2fe',
  started: '#7dd3fc',
  reviewing: '#fde68a',
  complete: '#86efac',
  blocked: '#fca5a5',
  ref: '#d8b4fe',
};

export const FRONTIER = {
  ready_to_start: { color: '#047857', label: 'ready to start' },
  ready_to_complete: { color: '#b45309', label: 'ready to complete' },
  blocked: { color: '#b91c1c', label: 'blocked (needs a human)' },
  needs_expansion: { color: '#6d28d9', label: 'needs expansion' },
};

function hue(name) {
  let h = 0;
  for (const c of name) h = (h * 31 + c.charCodeAt(0)) % 360;
  return h;
}

export function taskColors(status) {
  const c = TASK[status];
  if (c) return { bg: c[0], fg: c[1] };
  return { bg: `hsl(${hue(status)} 70% 92%)`, fg: '#1f2937' };
}

export function vineColor(status) {
  return VINE[status] || `hsl(${hue(status || '?')} 70% 85%)`;
}

export function sortStatuses(list) {
  const seen = [...new Set(list)];
  return seen.sort((a, b) => {
    const ia = TASK_ORDER.indexOf(a);
    const ib = TASK_ORDER.indexOf(b);
    if (ia >= 0 && ib >= 0) return ia - ib;
    if (ia >= 0) return -1;
    if (ib >= 0) return 1;
    return a < b ? -1 : 1;
  });
}
