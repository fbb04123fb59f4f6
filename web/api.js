// SPDX-License-Identifier: Apache-2.0
// Talking to the server that served this page, and nothing else: every URL here is a path on
// the page's own origin. Holds the API key (sessionStorage, or localStorage when remembered),
// asks for one when the server answers 401, and turns refusals into messages a person can act on.

const KEY_NAME = 'synapse.apiKey';

export function apiKey() {
  return sessionStorage.getItem(KEY_NAME) || localStorage.getItem(KEY_NAME) || '';
}

export function setApiKey(key, remember) {
  declined = false;
  sessionStorage.setItem(KEY_NAME, key);
  if (remember) localStorage.setItem(KEY_NAME, key);
  else localStorage.removeItem(KEY_NAME);
}

// Set by the app: shows the key dialog and resolves to true once a new key is stored, false when
// the person declined. One dialog at a time, however many requests were refused together.
let askForKey = async () => false;
let pendingAsk = null;
let declined = false;  // asked and cancelled: not asked again until a key is set by hand
export function onUnauthorized(fn) { askForKey = fn; }
function askOnce(reason) {
  if (declined) return Promise.resolve(false);
  if (!pendingAsk) {
    pendingAsk = askForKey(reason).then((ok) => {
      declined = !ok;
      return ok;
    }).finally(() => { pendingAsk = null; });
  }
  return pendingAsk;
}

export class ApiError extends Error {
  constructor(status, message, { code = '', retryAfterS = 0 } = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfterS = retryAfterS;
  }
  get transient() { return this.status === 0 || this.status === 429 || this.status === 503; }
}

// The message to show for a failed request: what happened and what to do about it.
export function describeError(err) {
  if (err && err.name === 'AbortError') return 'Stopped.';
  if (!(err instanceof ApiError)) return 'Error: ' + (err && err.message ? err.message : err);
  const wait = err.retryAfterS > 0 ? ` Retry in ${err.retryAfterS} s.` : '';
  switch (err.status) {
    case 0: return 'Cannot reach the server (is it running?). Retrying when it is back.';
    case 401: return 'The server refused the API key: ' + err.message;
    case 429: return 'The server is busy (' + err.message + ').' + (wait || ' Retry in a moment.');
    case 503: return 'The server is not ready (' + err.message + ').' + (wait || ' Retry in a moment.');
    default: return `Error ${err.status}: ${err.message}`;
  }
}

async function errorFrom(res) {
  let message = res.statusText || 'request failed';
  let code = '';
  try {
    const body = await res.json();
    const e = body.error;
    if (typeof e === 'string') message = e;  // Ollama's shape
    else if (e) { message = e.message || message; code = e.code || e.type || ''; }
  } catch { /* a body that is not JSON keeps the status text */ }
  const retry = Number(res.headers.get('Retry-After'));
  return new ApiError(res.status, message, { code, retryAfterS: Number.isFinite(retry) ? retry : 0 });
}

// fetch() against this origin with the key; throws ApiError for a refusal (after one retry with
// a key the person gave, for a 401) and for an unreachable server (status 0).
export async function request(path, { method = 'GET', json, body, headers = {}, signal } = {}) {
  for (let attempt = 0; ; ++attempt) {
    const h = { ...headers };
    const key = apiKey();
    if (key) h.Authorization = 'Bearer ' + key;
    let payload = body;
    if (json !== undefined) {
      h['Content-Type'] = 'application/json';
      payload = JSON.stringify(json);
    }
    let res;
    try {
      res = await fetch(path, { method, headers: h, body: payload, signal, cache: 'no-store' });
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      throw new ApiError(0, 'network error');
    }
    if (res.ok) return res;
    const err = await errorFrom(res);
    const reason = key ? describeError(err) : 'This server needs an API key.';
    if (res.status === 401 && attempt === 0 && await askOnce(reason)) continue;
    throw err;
  }
}

export async function getJson(path, options) {
  return (await request(path, options)).json();
}

// The JSON payloads of a server-sent event stream, until [DONE] or the end of the body.
export async function* sseJson(res) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = event.split('\n').filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trimStart()).join('\n');
      if (data === '[DONE]') return;
      if (data) yield JSON.parse(data);
    }
  }
}

// Calls `fn` every `intervalMs` while the page is open; after a failure, waits twice as long
// each time (up to a minute) and reports the wait through `onError`, so that a server restart
// shows a message instead of a flood of failed requests.
export function poll(fn, intervalMs, onError, onRecover) {
  let delay = intervalMs;
  let timer = 0;
  let failing = false;
  const tick = async () => {
    try {
      await fn();
      if (failing) onRecover();
      failing = false;
      delay = intervalMs;
    } catch (e) {
      failing = true;
      delay = Math.min(delay * 2, 60000);
      onError(e, delay);
    }
    timer = setTimeout(tick, document.hidden ? Math.max(delay, 10000) : delay);
  };
  tick();
  return { now() { clearTimeout(timer); tick(); } };
}
