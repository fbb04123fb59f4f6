// SPDX-License-Identifier: Apache-2.0
// The page's entry: the three views as keyboard-navigable tabs (#chat, #embed, #dash in the
// address), the API-key dialog the server's 401 opens, the banner that says when the server is
// unreachable or busy, and one polling loop that keeps models and the dashboard fresh.
import { getJson, onUnauthorized, setApiKey, apiKey, poll, describeError } from './api.js';
import { initChat, setChatModels } from './chat.js';
import { initEmbed, setEmbedModels } from './embed.js';
import { initDashboard, refreshDashboard } from './dashboard.js';

const $ = (id) => document.getElementById(id);
const TABS = { chat: 'tab-chat', embed: 'tab-embed', dash: 'tab-dash' };
let current = 'chat';
let poller = null;

function banner(text, isError) {
  const b = $('banner');
  b.hidden = !text;
  b.textContent = text || '';
  b.classList.toggle('error', Boolean(isError));
}

function show(view, focus) {
  if (!TABS[view]) view = 'chat';
  current = view;
  for (const [name, id] of Object.entries(TABS)) {
    const tab = $(id);
    const on = name === view;
    tab.setAttribute('aria-selected', String(on));
    tab.tabIndex = on ? 0 : -1;
    $(tab.getAttribute('aria-controls')).hidden = !on;
    if (on && focus) tab.focus();
  }
  if (location.hash !== '#' + view) history.replaceState(null, '', '#' + view);
  poller?.now();
}

// Arrow keys, Home and End move between tabs (the WAI-ARIA tabs pattern).
function tabKeys(event) {
  const names = Object.keys(TABS);
  const i = names.indexOf(current);
  const to = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: names.length - 1 }[event.key];
  if (to === undefined) return;
  event.preventDefault();
  show(names[(to + names.length) % names.length], true);
}

// Opens the key dialog; resolves true when a key was entered.
function askForKey(reason) {
  const dialog = $('key-dialog');
  $('key-reason').textContent = reason || 'This server needs an API key.';
  $('key-input').value = '';
  return new Promise((resolve) => {
    const done = (ok) => {
      dialog.removeEventListener('close', onClose);
      resolve(ok);
    };
    const onClose = () => {
      const key = $('key-input').value.trim();
      if (dialog.returnValue === 'ok' && key) {
        setApiKey(key, $('key-remember').checked);
        done(true);
      } else {
        done(false);
      }
    };
    dialog.addEventListener('close', onClose);
    dialog.returnValue = '';
    dialog.showModal();
    $('key-input').focus();
  });
}

async function refresh() {
  const models = (await getJson('/v1/models')).data;
  setChatModels(models);
  setEmbedModels(models);
  if (current === 'dash') await refreshDashboard(models);
}

function start() {
  initChat();
  initEmbed();
  initDashboard();
  onUnauthorized(askForKey);
  for (const [name, id] of Object.entries(TABS)) {
    $(id).addEventListener('click', () => show(name, false));
    $(id).addEventListener('keydown', tabKeys);
  }
  $('key-button').addEventListener('click', async () => {
    if (await askForKey(apiKey() ? 'Enter a new API key.' : 'Enter the API key.')) poller?.now();
  });
  $('key-cancel').addEventListener('click', () => $('key-dialog').close(''));
  window.addEventListener('hashchange', () => show(location.hash.slice(1), false));
  show(location.hash.slice(1), false);
  // Every two seconds on the dashboard, every ten elsewhere (models come and go).
  let ticks = 0;
  poller = poll(async () => {
    if (current !== 'dash' && ticks++ % 5 !== 0) return;
    await refresh();
  }, 2000, (e, delayMs) => {
    ticks = 0;
    banner(`${describeError(e)} Next try in ${Math.round(delayMs / 1000)} s.`, true);
  }, () => banner(''));
}

start();
