// SPDX-License-Identifier: Apache-2.0
// The chat playground: streamed answers from /v1/chat/completions with stop, regenerate and
// copy, Markdown rendering, token counts and speed per answer, an optional JSON schema
// (response_format json_schema), and the conversation and settings kept in localStorage.
import { request, sseJson, describeError, ApiError } from './api.js';
import { renderMarkdown } from './markdown.js';

const STORE = 'synapse.chat';
const MAX_RETRIES = 3;  // for 429/503 before the answer started
const $ = (id) => document.getElementById(id);

let state = { messages: [], settings: {} };
let running = null;  // {controller} while an answer streams

function save() {
  try {
    localStorage.setItem(STORE, JSON.stringify(state));
  } catch { /* storage full or disabled: the conversation still works, unsaved */ }
}

function load() {
  try {
    const s = JSON.parse(localStorage.getItem(STORE) || 'null');
    if (s && Array.isArray(s.messages)) state = { messages: s.messages, settings: s.settings || {} };
  } catch { /* a corrupt entry starts a new conversation */ }
}

const SETTINGS = ['chat-system', 'chat-temperature', 'chat-top-p', 'chat-max-tokens', 'chat-seed',
                  'chat-schema', 'chat-use-schema'];

function readSettings() {
  for (const id of SETTINGS) {
    const el = $(id);
    state.settings[id] = el.type === 'checkbox' ? el.checked : el.value;
  }
  state.settings.model = $('chat-model').value;
  save();
}

function applySettings() {
  for (const id of SETTINGS) {
    const v = state.settings[id];
    if (v === undefined) continue;
    const el = $(id);
    if (el.type === 'checkbox') el.checked = Boolean(v);
    else el.value = v;
  }
  $('chat-schema').hidden = !$('chat-use-schema').checked;
}

function statsText(stats) {
  if (!stats) return '';
  const parts = [`${stats.tokens} token${stats.tokens === 1 ? '' : 's'}`];
  if (stats.tokensPerS) parts.push(`${stats.tokensPerS.toFixed(1)} tokens/s`);
  if (stats.ttftS !== undefined) parts.push(`first token ${stats.ttftS.toFixed(2)} s`);
  if (stats.promptTokens) parts.push(`prompt ${stats.promptTokens} tokens`);
  if (stats.finish) parts.push(stats.finish === 'stopped' ? 'stopped' : `finish: ${stats.finish}`);
  return parts.join(' · ');
}

async function copyText(text, button) {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // No clipboard API (an insecure origin): copy through a selection.
    const area = document.createElement('textarea');
    area.value = text;
    document.body.append(area);
    area.select();
    document.execCommand('copy');
    area.remove();
  }
  button.textContent = 'Copied';
  setTimeout(() => { button.textContent = 'Copy'; }, 1500);
}

// One message's element; assistant messages get Copy (and Regenerate on the last one).
function messageElement(message, index) {
  const li = document.createElement('li');
  li.className = 'msg ' + message.role;
  li.dataset.state = message.state || 'done';
  const who = document.createElement('div');
  who.className = 'who';
  who.textContent = message.role === 'user' ? 'You' : (message.model || 'Assistant');
  const body = document.createElement('div');
  body.className = 'body';
  const stats = document.createElement('div');
  stats.className = 'stats';
  li.append(who, body, stats);
  if (message.role === 'assistant') {
    const tools = document.createElement('span');
    tools.className = 'tools';
    const copy = document.createElement('button');
    copy.type = 'button';
    copy.className = 'quiet';
    copy.textContent = 'Copy';
    copy.setAttribute('aria-label', 'Copy this answer');
    copy.addEventListener('click', () => copyText(message.content, copy));
    tools.append(copy);
    if (index === state.messages.length - 1) {
      const again = document.createElement('button');
      again.type = 'button';
      again.className = 'quiet regenerate';
      again.textContent = 'Regenerate';
      again.addEventListener('click', regenerate);
      tools.append(again);
    }
    who.append(tools);
  }
  fillMessage(li, message);
  return li;
}

function fillMessage(li, message) {
  const body = li.querySelector('.body');
  if (message.role === 'assistant') body.innerHTML = renderMarkdown(message.content);
  else body.textContent = message.content;
  const stats = li.querySelector('.stats');
  stats.textContent = statsText(message.stats);
  if (message.error) {
    const e = document.createElement('div');
    e.className = 'error';
    e.setAttribute('role', 'alert');
    e.textContent = message.error;
    stats.append(e);
  }
  li.dataset.state = message.state || 'done';
}

function renderLog() {
  const log = $('chat-log');
  log.replaceChildren(...state.messages.map(messageElement));
  log.lastElementChild?.scrollIntoView({ block: 'end' });
}

function setRunning(on) {
  $('chat-send').disabled = on;
  $('chat-stop').disabled = !on;
  for (const b of document.querySelectorAll('#chat-log .regenerate')) b.disabled = on;
}

function requestBody() {
  const s = state.settings;
  const messages = [];
  if (s['chat-system']?.trim()) messages.push({ role: 'system', content: s['chat-system'] });
  for (const m of state.messages) {
    if (m.role === 'user' || (m.role === 'assistant' && m.state === 'done')) {
      messages.push({ role: m.role, content: m.content });
    }
  }
  const body = { model: s.model, messages, stream: true, stream_options: { include_usage: true } };
  const number = (v) => (v === '' || v === undefined ? undefined : Number(v));
  body.temperature = number(s['chat-temperature']);
  body.top_p = number(s['chat-top-p']);
  body.max_tokens = number(s['chat-max-tokens']);
  body.seed = number(s['chat-seed']);
  if (s['chat-use-schema']) {
    body.response_format = {
      type: 'json_schema',
      json_schema: { name: 'answer', strict: true, schema: JSON.parse(s['chat-schema']) },
    };
  }
  return body;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Streams the answer to the conversation so far into a new assistant message.
async function answer() {
  readSettings();
  let body;
  try {
    body = requestBody();
  } catch (e) {
    state.messages.push({ role: 'assistant', content: '', state: 'error',
                          error: 'The JSON schema is not valid JSON: ' + e.message });
    renderLog();
    return;
  }
  const message = { role: 'assistant', content: '', state: 'streaming', model: body.model };
  state.messages.push(message);
  renderLog();
  const li = $('chat-log').lastElementChild;
  const controller = new AbortController();
  running = { controller };
  setRunning(true);
  const started = performance.now();
  let firstAt = 0;
  let chunks = 0;
  let usage = null;
  let finish = '';
  let frame = 0;
  const paint = () => {
    frame = 0;
    fillMessage(li, message);
  };
  try {
    let res;
    for (let attempt = 0; ; ++attempt) {
      try {
        res = await request('/v1/chat/completions', { method: 'POST', json: body, signal: controller.signal });
        break;
      } catch (e) {
        if (!(e instanceof ApiError) || !e.transient || e.status === 0 || attempt >= MAX_RETRIES) throw e;
        const waitS = Math.max(1, e.retryAfterS);
        message.error = `${describeError(e)} (retry ${attempt + 1} of ${MAX_RETRIES})`;
        message.error = message.error.replace(/Retry in [^.]*\./, `Retrying in ${waitS} s.`);
        fillMessage(li, message);
        await sleep(waitS * 1000);
        if (controller.signal.aborted) throw new DOMException('stopped', 'AbortError');
      }
    }
    message.error = '';
    for await (const chunk of sseJson(res)) {
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices && chunk.choices[0];
      if (!choice) continue;
      if (choice.finish_reason) finish = choice.finish_reason;
      const delta = choice.delta && choice.delta.content;
      if (delta) {
        if (!firstAt) firstAt = performance.now();
        ++chunks;
        message.content += delta;
        if (!frame) frame = requestAnimationFrame(paint);
      }
    }
    message.state = 'done';
  } catch (e) {
    if (e.name === 'AbortError') {
      message.state = 'done';
      finish = 'stopped';
    } else {
      message.state = 'error';
      message.error = describeError(e);
    }
  }
  if (frame) cancelAnimationFrame(frame);
  const endedAt = performance.now();
  const tokens = usage ? usage.completion_tokens : chunks;  // each streamed chunk is one token
  // Decode speed after the first token; a short answer that arrived in one burst has no
  // measurable decode time, so it is rated over the whole request instead.
  const decodeS = (endedAt - firstAt) / 1000;
  const tokensPerS = !firstAt ? 0 : decodeS >= 0.1 && tokens > 1 ? (tokens - 1) / decodeS
                                                                   : tokens / ((endedAt - started) / 1000);
  message.stats = {
    tokens,
    promptTokens: usage ? usage.prompt_tokens : 0,
    finish,
    ...(firstAt ? { ttftS: (firstAt - started) / 1000, tokensPerS } : {}),
  };
  running = null;
  setRunning(false);
  save();
  renderLog();
}

function send(event) {
  event.preventDefault();
  const input = $('chat-input');
  const text = input.value.trim();
  if (!text || running) return;
  if (!$('chat-model').value) {
    state.messages.push({ role: 'assistant', content: '', state: 'error', error: 'No chat model is served.' });
    renderLog();
    return;
  }
  input.value = '';
  state.messages.push({ role: 'user', content: text });
  answer();
}

function regenerate() {
  if (running) return;
  if (state.messages.length && state.messages[state.messages.length - 1].role === 'assistant') {
    state.messages.pop();
  }
  answer();
}

export function initChat() {
  load();
  applySettings();
  renderLog();
  $('chat-form').addEventListener('submit', send);
  $('chat-input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) send(e);
  });
  $('chat-stop').addEventListener('click', () => running?.controller.abort());
  $('chat-clear').addEventListener('click', () => {
    running?.controller.abort();
    state.messages = [];
    save();
    renderLog();
  });
  $('chat-use-schema').addEventListener('change', () => {
    $('chat-schema').hidden = !$('chat-use-schema').checked;
    readSettings();
  });
  for (const id of SETTINGS) $(id).addEventListener('change', readSettings);
  $('chat-model').addEventListener('change', readSettings);
}

// Fills the model choice with the generation models, keeping the saved one when it is served.
export function setChatModels(models) {
  const select = $('chat-model');
  const wanted = state.settings.model || select.value;
  const ids = models.filter((m) => !m.kind || m.kind === 'generation').map((m) => m.id);
  select.replaceChildren(...ids.map((id) => new Option(id, id)));
  if (ids.includes(wanted)) select.value = wanted;
}
