// Who the dashboard acts as (GET /v1/whoami): the token's name and role
// and the operations it may call. Pages offer only the actions the server
// would accept; the server still checks every call and a refusal is
// shown.

import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';

let pending = null;

function load() {
  if (!pending) {
    pending = api('/v1/whoami').catch((e) => {
      pending = null;
      throw e;
    });
  }
  return pending;
}

// useWhoami returns {may(op), role, name, known}: may(op) is false until
// the answer is in (no button flashes for a reader).
export function useWhoami() {
  const [me, setMe] = useState(null);
  useEffect(() => {
    let live = true;
    load().then(
      (w) => live && setMe(w),
      () => {},
    );
    return () => (live = false);
  }, []);
  // Rendered with the caller known: say so on the document (the browser
  // test waits for it before it checks which actions are offered).
  useEffect(() => {
    if (me) document.documentElement.dataset.whoami = me.role;
  }, [me]);
  return {
    known: !!me,
    role: me ? me.role : '',
    name: me ? me.name || '' : '',
    may: (op) => !!me && me.may.includes(op),
  };
}

// notAllowedText says, once the caller is known, that its role may not do
// what the page would otherwise offer ('' until then).
export function notAllowedText(me, what) {
  return me.known ? `Your token (${me.name || 'this token'}, role ${me.role}) may not ${what}.` : '';
}
