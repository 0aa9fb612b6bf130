// Hash routes: #/tasks?status=dead, #/tasks/<id>, #/graphs/<id>?node=x.

import { useEffect, useState } from 'preact/hooks';

export function parseHash(hash = location.hash) {
  const h = hash.replace(/^#/, '') || '/';
  const [path, qs] = h.split('?');
  const params = Object.fromEntries(new URLSearchParams(qs || ''));
  return { path: path || '/', params, parts: path.split('/').filter(Boolean).map(decodeURIComponent) };
}

export function href(path, params = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const s = q.toString();
  return '#' + path + (s ? '?' + s : '');
}

export function navigate(path, params = {}, replace = false) {
  const h = href(path, params);
  if (replace) history.replaceState(null, '', h);
  else history.pushState(null, '', h);
  window.dispatchEvent(new HashChangeEvent('hashchange'));
}

export function useRoute() {
  const [r, set] = useState(parseHash());
  useEffect(() => {
    const on = () => set(parseHash());
    window.addEventListener('hashchange', on);
    window.addEventListener('popstate', on);
    return () => {
      window.removeEventListener('hashchange', on);
      window.removeEventListener('popstate', on);
    };
  }, []);
  return r;
}
