// Small shared components: badges, errors, payloads, the confirmation
// dialog and the announcement region.

import { useEffect, useRef, useState } from 'preact/hooks';
import { taskColors } from '../status.js';
import { pretty } from '../format.js';

export function Badge({ status, children }) {
  const c = taskColors(status);
  return (
    <span class="badge" data-status={status} style={{ background: c.bg, color: c.fg }}>
      {children || status}
    </span>
  );
}

export function ErrorBox({ error }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      <strong>{error.code || 'error'}:</strong> {error.message || String(error)}
    </p>
  );
}

export function Loading({ what = 'Loading' }) {
  return (
    <p class="muted" role="status">
      {what}…
    </p>
  );
}

// Payload shows an event payload as JSON text (never as HTML).
export function Payload({ value }) {
  return <pre class="payload">{pretty(value)}</pre>;
}

// --- confirmation dialog -------------------------------------------------

let askConfirm = null;

// confirmAction asks the user to confirm; resolves true or false.
export function confirmAction(opts) {
  if (!askConfirm) return Promise.resolve(window.confirm(opts.message));
  return askConfirm(opts);
}

export function ConfirmHost() {
  const [req, setReq] = useState(null);
  const ref = useRef(null);
  useEffect(() => {
    askConfirm = (opts) => new Promise((resolve) => setReq({ ...opts, resolve }));
    return () => (askConfirm = null);
  }, []);
  useEffect(() => {
    const d = ref.current;
    if (req && d && !d.open) d.showModal();
  }, [req]);
  const done = (ok) => {
    const r = req;
    ref.current && ref.current.open && ref.current.close();
    setReq(null);
    r && r.resolve(ok);
  };
  return (
    <dialog ref={ref} class="confirm" aria-labelledby="confirm-title" onCancel={() => done(false)}>
      {req && (
        <form method="dialog" onSubmit={(e) => (e.preventDefault(), done(true))}>
          <h2 id="confirm-title">{req.title || 'Are you sure?'}</h2>
          <p>{req.message}</p>
          <div class="actions">
            <button type="button" class="secondary" onClick={() => done(false)}>
              Cancel
            </button>
            <button type="submit" class="primary" autofocus>
              {req.confirmLabel || 'Confirm'}
            </button>
          </div>
        </form>
      )}
    </dialog>
  );
}

// --- announcements --------------------------------------------------------

let announce = null;

// notify shows a short message and announces it to screen readers.
export function notify(message, kind = 'info') {
  announce && announce({ message, kind, at: Date.now() });
}

export function Notices() {
  const [list, setList] = useState([]);
  useEffect(() => {
    announce = (n) => {
      setList((l) => [...l.slice(-3), n]);
      setTimeout(() => setList((l) => l.filter((x) => x !== n)), 8000);
    };
    return () => (announce = null);
  }, []);
  return (
    <div class="notices" role="status" aria-live="polite">
      {list.map((n) => (
        <p key={n.at} class={'notice ' + n.kind}>
          {n.message}
        </p>
      ))}
    </div>
  );
}

// usePromise runs load() when deps change and keeps {data, error, loading};
// reload() runs it again without clearing what is shown.
export function useData(load, deps) {
  const [state, set] = useState({ data: null, error: null, loading: true });
  const seq = useRef(0);
  const run = (clear) => {
    const n = ++seq.current;
    if (clear) set((s) => ({ ...s, loading: true, error: null }));
    return load().then(
      (data) => n === seq.current && set({ data, error: null, loading: false }),
      (error) => n === seq.current && set((s) => ({ data: s.data, error, loading: false })),
    );
  };
  useEffect(() => {
    set({ data: null, error: null, loading: true });
    run(false);
  }, deps);
  return { ...state, reload: () => run(false) };
}
