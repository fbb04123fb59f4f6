// SPDX-License-Identifier: Apache-2.0
// The web UI in headless Chromium (Debian's `chromium`, driven by npm's `puppeteer-core`):
// a chat answer streamed token by token and stopped mid-way, the embeddings tab, a batch file
// submitted on the dashboard until its progress reads 100%, another job cancelled, the
// dashboard counting a streaming chat among the running interactive requests, the open server
// restarted under the page (which says it cannot reach it, then recovers by itself), the key
// dialog of a server with an API key, and the retry message of a 429. Checks that every request
// the page makes goes to the origin that served it, and measures the first load's transfer
// size. Saves a PNG of each view in SYNAPSE_ARTIFACTS. Prints one JSON line; exits non-zero on
// the first failed check.
//   NODE_PATH=build/npm/node_modules SYNAPSE_URL=... SYNAPSE_KEY_URL=... SYNAPSE_KEY=... \
//   SYNAPSE_MODEL=tiny SYNAPSE_ARTIFACTS=dir CHROMIUM=/usr/bin/chromium node web_browser.cjs
// With SYNAPSE_RESTART=1 (web_test.cc) the script restarts the open server through whoever runs
// it: it writes "@server stop", then "@server start", each on a line of its stdout, and reads one
// answer line for each on its stdin ("stopped 0" once the process exited with status 0, "started"
// once it listens on the same port again). Without it that part is skipped.
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');
const puppeteer = require('puppeteer-core');

const OPEN_URL = process.env.SYNAPSE_URL;     // no key, durable jobs
const KEY_URL = process.env.SYNAPSE_KEY_URL;  // --api-key, one slot, a queue of one
const KEY = process.env.SYNAPSE_KEY;
const MODEL = process.env.SYNAPSE_MODEL;
const ARTIFACTS = process.env.SYNAPSE_ARTIFACTS;
const FIRST_LOAD_BUDGET = 300 * 1000;
const seen = { requests: 0 };

function check(condition, what) {
  if (!condition) throw new Error('check failed: ' + what);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The answers of whoever runs the script (SYNAPSE_RESTART=1), one line each on stdin.
let control = null;
const answers = [];
const waiting = [];
function openControl() {
  control = readline.createInterface({ input: process.stdin });
  control.on('line', (l) => (waiting.length ? waiting.shift()(l) : answers.push(l)));
  control.on('close', () => { while (waiting.length) waiting.shift()(null); });
}

// Asks for `what` to be done to the open server; resolves with the answer (null: stdin closed).
function askRunner(what) {
  process.stdout.write(`@server ${what}\n`);
  return answers.length ? Promise.resolve(answers.shift()) : new Promise((r) => waiting.push(r));
}

// The number a stat of the dashboard's scheduler shows (NaN when it is not there).
async function statValue(page, name) {
  return page.evaluate((n) => {
    const b = [...document.querySelectorAll('#dash-sched [data-stat]')]
      .find((d) => d.dataset.stat === n)?.querySelector('b');
    return b ? Number(b.textContent) : NaN;
  }, name);
}

async function waitStat(page, name, predicate, what, timeout = 30000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const v = await statValue(page, name);
    if (predicate(v)) return v;
    check(Date.now() < deadline, `${what} (${name} reads ${v})`);
    await sleep(100);
  }
}

// Every request of `page` must go to `origin` (the CSP forbids others; this checks it did).
function watchRequests(page, origin) {
  const foreign = [];
  page.on('request', (r) => {
    ++seen.requests;
    if (new URL(r.url()).origin !== origin) foreign.push(r.url());
  });
  return foreign;
}

async function shot(page, name) {
  await page.screenshot({ path: path.join(ARTIFACTS, name + '.png'), fullPage: false });
}

// Loads the page, measuring the bytes that came over the wire until the network went quiet.
async function firstLoad(page, url) {
  const cdp = await page.createCDPSession();
  await cdp.send('Network.enable');
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
  let bytes = 0;
  cdp.on('Network.loadingFinished', (e) => { bytes += e.encodedDataLength; });
  await page.goto(url, { waitUntil: 'networkidle0' });
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: false });
  return bytes;
}

async function lastAnswer(page) {
  return page.$eval('#chat-log li.msg.assistant:last-child', (li) => ({
    state: li.dataset.state,
    text: li.querySelector('.body').textContent,
    stats: li.querySelector('.stats').textContent,
  }));
}

async function waitAnswerState(page, states, timeout = 60000) {
  await page.waitForFunction((s) => {
    const li = document.querySelector('#chat-log li.msg.assistant:last-child');
    return li && s.includes(li.dataset.state);
  }, { timeout }, states);
  return lastAnswer(page);
}

async function send(page, text) {
  await page.click('#chat-input');
  await page.keyboard.type(text);
  await page.keyboard.press('Enter');  // Enter sends: the keyboard path
}

async function setField(page, selector, value) {
  await page.$eval(selector, (el, v) => {
    el.value = v;
    el.dispatchEvent(new Event('change'));
  }, value);
}

async function chatStreamsAndStops(page) {
  await page.waitForFunction((m) => [...document.querySelectorAll('#chat-model option')]
    .some((o) => o.value === m), { timeout: 20000 }, MODEL);
  // A random-weight model: greedy decoding repeats one blank token, sampling writes visible text.
  // Long enough that Stop lands before the end: the tiny model writes ~800 tokens/s, and 4000
  // tokens ended (finish: length) before a click on a loaded machine took effect.
  await setField(page, '#chat-max-tokens', '30000');
  await setField(page, '#chat-temperature', '1');
  await setField(page, '#chat-seed', '1');
  // Record every length the answer's text takes, to see it grow token by token.
  await page.evaluate(() => {
    window.answerLengths = [];
    new MutationObserver(() => {
      const li = document.querySelector('#chat-log li.msg.assistant:last-child');
      if (li && li.dataset.state === 'streaming') {
        const n = li.querySelector('.body').textContent.length;
        if (window.answerLengths[window.answerLengths.length - 1] !== n) window.answerLengths.push(n);
      }
    }).observe(document.getElementById('chat-log'), { subtree: true, childList: true, characterData: true });
  });
  await send(page, 'Tell me a long story about a small robot.');
  await page.waitForFunction(() => window.answerLengths.filter((n) => n > 0).length >= 5,
                             { timeout: 60000 });
  check(!(await page.$eval('#chat-stop', (b) => b.disabled)), 'Stop is enabled while streaming');
  await page.click('#chat-stop');
  const stopped = await waitAnswerState(page, ['done', 'error'], 10000);
  check(stopped.state === 'done', 'a stopped answer is kept: ' + JSON.stringify(stopped));
  check(/stopped/.test(stopped.stats), 'the answer says it was stopped: ' + stopped.stats);
  check(/\d+ tokens/.test(stopped.stats), 'token count shown: ' + stopped.stats);
  const lengths = await page.evaluate(() => window.answerLengths);
  const growing = lengths.filter((n) => n > 0);
  check(growing.length >= 5 && growing.every((n, i) => i === 0 || n > growing[i - 1]),
        'the answer grew in steps: ' + JSON.stringify(lengths.slice(0, 20)));
  await sleep(500);
  const later = await lastAnswer(page);
  check(later.text === stopped.text, 'nothing arrives after Stop');
  // Fewer tokens than asked: it really stopped mid-way.
  const tokens = Number(stopped.stats.match(/(\d+) tokens?/)[1]);
  check(tokens > 0 && tokens < 4000, 'stopped mid-way at ' + tokens + ' tokens');
  seen.streamed_lengths = growing.length;
  seen.stopped_at_tokens = tokens;

  // A short answer that ends by itself, with its speed, kept across a reload.
  await setField(page, '#chat-max-tokens', '12');
  await send(page, 'Say hello.');
  const done = await waitAnswerState(page, ['done', 'error']);
  check(done.state === 'done' && /tokens\/s/.test(done.stats), 'speed shown: ' + JSON.stringify(done));
  await shot(page, 'chat');
  await page.reload({ waitUntil: 'networkidle0' });
  const count = await page.$$eval('#chat-log li.msg', (l) => l.length);
  check(count === 4, 'the conversation survives a reload (4 messages): ' + count);
  // Regenerate replaces the last answer.
  await page.click('#chat-log li.msg.assistant:last-child .regenerate');
  const again = await waitAnswerState(page, ['done', 'error']);
  check(again.state === 'done', 'regenerated: ' + JSON.stringify(again));
  check(await page.$$eval('#chat-log li.msg', (l) => l.length) === 4, 'regenerate replaced the answer');

  // The JSON-schema box: the answer is constrained to the schema (response_format json_schema).
  await page.click('#chat-use-schema');
  await page.$eval('#chat-schema', (el) => {
    el.value = JSON.stringify({ type: 'object', properties: { answer: { enum: ['yes', 'no'] } },
                                required: ['answer'], additionalProperties: false });
    el.dispatchEvent(new Event('change'));
  });
  await setField(page, '#chat-max-tokens', '60');
  await send(page, 'Yes or no?');
  const structured = await waitAnswerState(page, ['done', 'error']);
  check(structured.state === 'done', 'structured answer: ' + JSON.stringify(structured));
  const parsed = JSON.parse(structured.text);
  check(['yes', 'no'].includes(parsed.answer), 'the answer follows the schema: ' + structured.text);
  seen.structured = parsed;
  await page.click('#chat-use-schema');

  // Narrow screens: one column, nothing wider than the viewport.
  await page.setViewport({ width: 375, height: 800 });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(overflow <= 0, 'no horizontal scrolling at 375 px: ' + overflow);
  await shot(page, 'chat-narrow');
  await page.setViewport({ width: 1280, height: 900 });
}

async function embeddings(page) {
  await page.focus('#tab-chat');
  await page.keyboard.press('ArrowRight');  // tabs move with the arrow keys
  check(await page.$eval('#tab-embed', (t) => t.getAttribute('aria-selected')) === 'true',
        'ArrowRight selects the Embeddings tab');
  await page.click('#embed-form button[type=submit]');
  await page.waitForFunction(() => /Cosine similarity/.test(document.getElementById('embed-result').textContent),
                             { timeout: 30000 });
  await shot(page, 'embeddings');
}

// Unique per run: the same requests again would be answered with the earlier job (idempotence).
const RUN = Date.now().toString(36);
const jsonl = (n, maxTokens, tag) => Array.from({ length: n }, (_, i) => JSON.stringify({
  custom_id: `${tag}-${i}-${RUN}`, method: 'POST', url: '/v1/completions',
  body: { model: MODEL, prompt: 'Once upon a time', max_tokens: maxTokens, temperature: 0 },
})).join('\n') + '\n';

async function submitFile(page, dir, name, text) {
  const file = path.join(dir, name);
  fs.writeFileSync(file, text);
  const input = await page.$('#job-file');
  await input.uploadFile(file);
  await page.click('#job-form button[type=submit]');
  await page.waitForFunction((n) => document.getElementById('job-message').textContent.includes(`(${n} requests`),
                             { timeout: 20000 }, text.trim().split('\n').length);
  return page.$eval('#job-message', (d) => d.textContent.match(/Submitted (\S+)/)[1]);
}

async function jobRow(page, id) {
  return page.$eval(`tr[data-job="${id}"]`, (tr) => ({
    status: tr.dataset.status,
    progress: tr.querySelector('.progress').textContent.trim(),
    value: tr.querySelector('progress').value,
  }));
}

async function dashboard(page, dir) {
  await page.click('#tab-dash');
  await page.waitForFunction(() => document.querySelectorAll('#dash-models tbody tr').length > 0 &&
                             /Kernel level/.test(document.getElementById('dash-machine').textContent),
                             { timeout: 20000 });
  const small = await submitFile(page, dir, 'small.jsonl', jsonl(6, 8, 'small'));
  const progress = new Set();
  const deadline = Date.now() + 90000;
  for (;;) {
    const row = await page.$(`tr[data-job="${small}"]`) ? await jobRow(page, small) : null;
    if (row) progress.add(row.progress);
    if (row && row.status === 'completed') {
      check(row.progress === '100%' && row.value === 100, 'completed at 100%: ' + JSON.stringify(row));
      break;
    }
    check(Date.now() < deadline, 'the small job completes: ' + JSON.stringify([...progress]));
    await sleep(200);
  }
  seen.progress_seen = [...progress];
  // Its pages: the results of the first page are shown.
  await page.click(`tr[data-job="${small}"] td:first-child button`);
  await page.waitForFunction(() => /small-0/.test(document.getElementById('job-detail').textContent),
                             { timeout: 10000 });
  await page.waitForFunction(() => /tokens\/s/.test(document.getElementById('dash-sched').textContent));
  await shot(page, 'dashboard');

  const big = await submitFile(page, dir, 'big.jsonl', jsonl(200, 400, 'big'));
  await page.waitForSelector(`tr[data-job="${big}"] button.cancel`, { timeout: 10000 });
  await page.click(`tr[data-job="${big}"] button.cancel`);
  await page.waitForFunction((id) => {
    const tr = document.querySelector(`tr[data-job="${id}"]`);
    return tr && tr.dataset.status === 'cancelled';
  }, { timeout: 20000 }, big);
  const row = await jobRow(page, big);
  check(row.value < 100, 'cancelled before the end: ' + JSON.stringify(row));
  seen.cancelled_at = row.progress;
  await shot(page, 'dashboard-cancelled');
}

// While an answer streams, the dashboard counts it among the running interactive requests (the
// synapse_running_sequences gauge of /metrics), and it goes back to 0 when the answer is stopped.
async function runningPerClass(page) {
  await page.click('#tab-dash');
  // (The cancelled job's requests in flight may still run: batch need not be 0.)
  for (const c of ['batch', 'background']) {
    await waitStat(page, `running ${c}`, (v) => v >= 0, `the dashboard shows running ${c} requests`);
  }
  await waitStat(page, 'running interactive', (v) => v === 0, 'no interactive request runs yet');
  await page.click('#tab-chat');
  await page.click('#chat-clear');
  await setField(page, '#chat-max-tokens', '4000');
  // A fast build can write the whole answer between two refreshes; such an attempt is repeated.
  for (let attempt = 0; ; ++attempt) {
    check(attempt < 5, 'the dashboard showed the streaming answer running');
    await send(page, 'Tell me a very long story.');
    await waitAnswerState(page, ['streaming', 'done', 'error'], 30000);
    await page.click('#tab-dash');  // showing the dashboard refreshes it at once
    const handle = await page.waitForFunction(() => {
      const b = document.querySelector('#dash-sched [data-stat="running interactive"] b');
      if (b && Number(b.textContent) >= 1) return 'running';
      const li = document.querySelector('#chat-log li.msg.assistant:last-child');
      return li.dataset.state !== 'streaming' ? 'ended' : false;
    }, { timeout: 30000 });
    const seenRunning = (await handle.jsonValue()) === 'running';
    if (seenRunning) {
      seen.running_interactive = await statValue(page, 'running interactive');
      await shot(page, 'dashboard-running');
    }
    await page.click('#tab-chat');
    if (!(await page.$eval('#chat-stop', (b) => b.disabled))) await page.click('#chat-stop');
    const answer = await waitAnswerState(page, ['done', 'error'], 10000);
    check(answer.state === 'done', 'the long answer: ' + JSON.stringify(answer));
    if (seenRunning) break;
  }
  await page.click('#tab-dash');
  await waitStat(page, 'running interactive', (v) => v === 0, 'the stopped answer no longer runs');
}

// The open server stopped (SIGTERM) and started again on its port under the page: the page says
// it cannot reach the server, then recovers by itself: the banner goes, the dashboard shows the
// new process, and a chat message is answered.
async function serverRestart(page) {
  await page.click('#tab-dash');
  const finished = await waitStat(page, 'requests finished', (v) => v > 0, 'requests were finished');
  const stopped = await askRunner('stop');
  check(stopped === 'stopped 0', 'the server exits cleanly on SIGTERM: ' + stopped);
  await page.waitForFunction(() => {
    const b = document.getElementById('banner');
    return !b.hidden && /Cannot reach the server/.test(b.textContent);
  }, { timeout: 30000 });
  seen.restart_banner = await page.$eval('#banner', (b) => b.textContent);
  await shot(page, 'server-restarting');
  const started = await askRunner('start');
  check(started === 'started', 'the server started again on its port: ' + started);
  // The page retries with a back-off (2 s doubling, at most 60 s): well within this.
  const t0 = Date.now();
  await page.waitForFunction(() => document.getElementById('banner').hidden, { timeout: 120000 });
  seen.recovered_after_ms = Date.now() - t0;
  // A new process counts its finished requests from 0.
  await waitStat(page, 'requests finished', (v) => v < finished,
                 `the dashboard shows the restarted server (${finished} before)`);
  await page.click('#tab-chat');
  await setField(page, '#chat-max-tokens', '12');
  await send(page, 'Are you back?');
  const answer = await waitAnswerState(page, ['done', 'error']);
  check(answer.state === 'done', 'chat works after the restart: ' + JSON.stringify(answer));
  seen.restarted = true;
}

// Streaming requests that hold the keyed server's one slot and its one queue place; add() sends
// one more.
function occupy() {
  const controller = new AbortController();
  const requests = [];
  return {
    add() {
      requests.push(fetch(KEY_URL + '/v1/chat/completions', {
        method: 'POST', signal: controller.signal,
        headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + KEY },
        body: JSON.stringify({ model: MODEL, stream: true, max_tokens: 3000, temperature: 0,
                               messages: [{ role: 'user', content: 'Go on and on.' }] }),
      }).then((r) => r.body.getReader().read()).catch(() => null));
    },
    stop() { controller.abort(); return Promise.all(requests); },
  };
}

// Waits until the keyed server's interactive `gauge` of /metrics reaches `at_least`.
async function keyedGaugeReaches(gauge, atLeast, what) {
  const deadline = Date.now() + 30000;
  for (;;) {
    const r = await fetch(KEY_URL + '/metrics', { headers: { Authorization: 'Bearer ' + KEY } });
    const m = (await r.text()).match(new RegExp(gauge + '\\{class="interactive"\\} (\\d+)'));
    if (m && Number(m[1]) >= atLeast) return;
    check(Date.now() < deadline, what);
    await sleep(100);
  }
}

async function keyAndBusy(browser) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  const foreign = watchRequests(page, new URL(KEY_URL).origin);
  await page.goto(KEY_URL, { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('#key-dialog[open]', { timeout: 20000 });
  await shot(page, 'api-key');
  await page.type('#key-input', KEY);
  await page.keyboard.press('Enter');
  await page.waitForFunction((m) => [...document.querySelectorAll('#chat-model option')]
    .some((o) => o.value === m), { timeout: 20000 }, MODEL);
  check(await page.$eval('#banner', (b) => b.hidden), 'no error banner once the key is given');
  await setField(page, '#chat-max-tokens', '8');
  await send(page, 'Hi');
  const first = await waitAnswerState(page, ['done', 'error']);
  check(first.state === 'done', 'chat works with the key: ' + JSON.stringify(first));

  // One after the other: sent together, the second can reach the queue before the first left it
  // for the slot, and be refused (the queue holds one).
  const blockers = occupy();
  blockers.add();
  await keyedGaugeReaches('synapse_running_sequences', 1, 'the first request takes the keyed server\'s slot');
  blockers.add();
  await keyedGaugeReaches('synapse_queue_depth', 1, 'the keyed server\'s queue fills');
  await send(page, 'Are you busy?');
  await page.waitForFunction(() => {
    const e = document.querySelector('#chat-log li.msg.assistant:last-child .error');
    return e && /busy/.test(e.textContent) && /Retrying in \d+ s/.test(e.textContent);
  }, { timeout: 20000 });
  seen.busy_message = await page.$eval('#chat-log li.msg.assistant:last-child .error', (e) => e.textContent);
  await shot(page, 'busy-429');
  await blockers.stop();
  const after = await waitAnswerState(page, ['done', 'error'], 60000);
  check(after.state === 'done', 'the retry succeeds once the server has room: ' + JSON.stringify(after));
  check(foreign.length === 0, 'requests to other origins: ' + foreign.join(' '));
  await page.close();
}

// The server gone (as during a restart): the page says so and backs off, then recovers by itself.
async function serverAway(page) {
  const cdp = await page.createCDPSession();
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions',
                 { offline: true, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
  await page.waitForFunction(() => {
    const b = document.getElementById('banner');
    return !b.hidden && /Cannot reach the server/.test(b.textContent);
  }, { timeout: 20000 });
  await shot(page, 'server-away');
  await cdp.send('Network.emulateNetworkConditions',
                 { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
  await page.waitForFunction(() => document.getElementById('banner').hidden, { timeout: 30000 });
  await cdp.detach();
}

async function main() {
  if (process.env.SYNAPSE_RESTART === '1') openControl();
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const dir = fs.mkdtempSync(path.join(require('os').tmpdir(), 'synapse-web-'));
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    // As root in a container: no sandbox; no GPU or /dev/shm there either.
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    const foreign = watchRequests(page, new URL(OPEN_URL).origin);
    seen.first_load_bytes = await firstLoad(page, OPEN_URL + '/');
    check(seen.first_load_bytes <= FIRST_LOAD_BUDGET, 'first load ' + seen.first_load_bytes + ' bytes');
    check(await page.$('#chat-form'), 'the page loaded');
    await chatStreamsAndStops(page);
    await embeddings(page);
    await dashboard(page, dir);
    await runningPerClass(page);
    await serverAway(page);
    if (process.env.SYNAPSE_RESTART === '1') await serverRestart(page);
    check(foreign.length === 0, 'requests to other origins: ' + foreign.join(' '));
    // Failed fetches while offline or while the server restarts are the browser's own console
    // lines (a refused connection, a 503 while it shut down), not the page's errors.
    const ours = errors.filter((e) => !/net::ERR_|Failed to fetch|Failed to load resource/.test(e));
    check(ours.length === 0, 'no script errors: ' + ours.join(' | '));
    await page.close();
    await keyAndBusy(browser);
  } finally {
    await browser.close();
    fs.rmSync(dir, { recursive: true, force: true });
    control?.close();
    if (control) process.stdin.destroy();
  }
  seen.ok = true;
  console.log(JSON.stringify(seen));
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});
