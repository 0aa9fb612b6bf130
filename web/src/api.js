// Every call the dashboard makes goes through the server's HTTP API, with
// the bearer token when one was given, so the API's authentication covers
// the dashboard as well.

const TOKEN_KEY = 'trellis.token';

export function getToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) || '';
  } catch {
    return '';
  }
}

export function setToken(t) {
  try {
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    /* storage disabled: the token lives for this page only */
  }
}

export function authHeaders() {
  const t = getToken();
  return t ? { Authorization: 'Bearer ' + t } : {};
}

// ApiError is a failure in the API's error shape.
export class ApiError extends Error {
  constructor(status, code, field, message) {
    super(field ? `${field}: ${message}` : message);
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

// unauthorized tells the app shell to ask for a token.
export function unauthorized() {
  window.dispatchEvent(new CustomEvent('trellis:unauthorized'));
}

export async function api(path, { method = 'GET', body, signal, text = false } = {}) {
  const headers = { Accept: text ? 'text/markdown, text/plain' : 'application/json', ...authHeaders() };
  const init = { method, headers, signal, credentials: 'same-origin' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  if (!res.ok) {
    let e = {};
    try {
      e = (await res.json()).error || {};
    } catch {
      /* not the error shape */
    }
    if (res.status === 401) unauthorized();
    throw new ApiError(res.status, e.code || 'internal', e.field || '', e.message || res.statusText);
  }
  return text ? res.text() : res.json();
}

// query builds a query string from the non-empty values of params.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  const s = q.toString();
  return s ? '?' + s : '';
}

export const enc = encodeURIComponent;
