// Formatting helpers.

export function ago(t, now = Date.now()) {
  if (!t) return '';
  const ms = now - new Date(t).getTime();
  if (!isFinite(ms)) return '';
  const s = Math.round(ms / 1000);
  if (s < 0) return 'in ' + dur(-s * 1000);
  if (s < 5) return 'just now';
  return dur(ms) + ' ago';
}

export function dur(ms) {
  const s = Math.round(ms / 1000);
  if (s < 60) return s + 's';
  const m = Math.floor(s / 60);
  if (m < 60) return m + 'm' + (s % 60 ? ' ' + (s % 60) + 's' : '');
  const h = Math.floor(m / 60);
  if (h < 48) return h + 'h' + (m % 60 ? ' ' + (m % 60) + 'm' : '');
  return Math.floor(h / 24) + 'd';
}

export function ms(v) {
  if (v === null || v === undefined) return '–';
  if (v < 1000) return Math.round(v) + ' ms';
  return (v / 1000).toFixed(v < 10000 ? 2 : 1) + ' s';
}

export function time(t) {
  if (!t) return '';
  const d = new Date(t);
  return d.toLocaleString(undefined, { hour12: false });
}

export function iso(t) {
  return t ? new Date(t).toISOString() : '';
}

export function pretty(v) {
  try {
    return JSON.stringify(v, null, 2);
  } catch {
    return String(v);
  }
}

export function sum(arr) {
  let s = 0;
  for (const v of arr || []) s += v || 0;
  return s;
}
