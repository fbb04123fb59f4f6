// SPDX-License-Identifier: Apache-2.0
// The operations dashboard: loaded models and their memory, the scheduler from /metrics (running
// sequences and queue depth per class, KV pages, charts of time to first token and tokens/s),
// durable jobs (list, progress, pages and errors, cancel, submit a batch JSONL file) and the
// machine (/v1/system: kernel level, self-check, memory bandwidth). Polls every two seconds
// while shown, backing off while the server is unreachable.
import { getJson, request, describeError, ApiError } from './api.js';
import { parsePrometheus, summarize } from './metrics.js';
import { drawChart, formatValue } from './chart.js';

const $ = (id) => document.getElementById(id);
const SPAN_MS = 5 * 60 * 1000;  // what the charts show
let previous = null;
let previousAt = 0;
const history = { ttft: [], tps: [], queue: {} };
let openJob = null;  // the job whose details are shown: {id, page}

function bytes(n) {
  if (!n) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; ++i; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

function cells(row, values) {
  for (const v of values) {
    const td = row.insertCell();
    if (v instanceof Node) td.append(v);
    else td.textContent = v;
  }
}

export function showModels(models) {
  const body = $('dash-models').tBodies[0];
  body.replaceChildren();
  for (const m of models) {
    const state = m.loaded === undefined ? '–' : m.loaded ? 'loaded' : 'not loaded';
    cells(body.insertRow(), [m.id, m.kind || 'generation', state, m.loaded ? bytes(m.bytes) : '–',
                             m.requests === undefined ? '–' : String(m.requests)]);
  }
}

function stat(name, value) {
  const d = document.createElement('div');
  d.dataset.stat = name;
  const b = document.createElement('b');
  b.textContent = value;
  d.append(b, name);
  return d;
}

async function refreshMetrics() {
  const text = await (await request('/metrics')).text();
  const now = Date.now();
  const s = summarize(parsePrometheus(text), previous, (now - previousAt) / 1000);
  previous = s;
  previousAt = now;
  const queued = Object.entries(s.queue);
  $('dash-sched').replaceChildren(
    stat('running sequences', String(s.running)),
    ...Object.entries(s.runningByClass).map(([c, n]) => stat(`running ${c}`, String(n))),
    ...queued.map(([c, n]) => stat(`queued ${c}`, String(n))),
    stat('KV pages in use', s.kvTotal ? `${s.kvInUse} / ${s.kvTotal}` : '–'),
    stat('requests finished', String(s.requests)),
    stat('tokens/s', formatValue(s.tokensPerS)));
  const keep = (points) => {
    while (points.length && points[0].t < now - SPAN_MS) points.shift();
    return points;
  };
  keep(history.ttft).push({ t: now, v: s.ttftS });
  keep(history.tps).push({ t: now, v: s.tokensPerS });
  for (const [c, n] of queued) keep(history.queue[c] ||= []).push({ t: now, v: n });
  drawChart($('chart-ttft'), [{ name: 'mean', points: history.ttft }], SPAN_MS, now);
  drawChart($('chart-tps'), [{ name: 'all', points: history.tps }], SPAN_MS, now);
  drawChart($('chart-queue'), Object.entries(history.queue).map(([name, points]) => ({ name, points })),
            SPAN_MS, now);
}

function progressOf(job) {
  const c = job.counts || {};
  if (job.status === 'completed') return 1;
  return c.total ? ((c.succeeded || 0) + (c.failed || 0)) / c.total : 0;
}

async function cancelJob(id, button) {
  button.disabled = true;
  try {
    await request(`/v1/jobs/${encodeURIComponent(id)}/cancel`, { method: 'POST' });
  } catch (e) {
    $('job-message').textContent = describeError(e);
  }
  await refreshJobs();
}

async function refreshJobs() {
  let list;
  try {
    list = await getJson('/v1/jobs?limit=20');
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) {
      $('dash-jobs').tBodies[0].replaceChildren();
      $('job-form').querySelector('button').disabled = true;
      $('job-message').textContent = 'Durable jobs are off on this server (--no-jobs).';
      return;
    }
    throw e;
  }
  const body = $('dash-jobs').tBodies[0];
  body.replaceChildren();
  for (const job of list.data) {
    const row = body.insertRow();
    row.dataset.job = job.id;
    row.dataset.status = job.status;
    const link = document.createElement('button');
    link.type = 'button';
    link.className = 'quiet';
    link.textContent = job.id.length > 16 ? job.id.slice(0, 16) + '…' : job.id;
    link.title = job.id;
    link.setAttribute('aria-label', `Show job ${job.id}`);
    link.addEventListener('click', () => showJob(job.id, 0));
    const fraction = progressOf(job);
    const progress = document.createElement('span');
    const bar = document.createElement('progress');
    bar.max = 100;
    bar.value = Math.round(fraction * 100);
    bar.setAttribute('aria-label', `Progress of ${job.id}`);
    progress.append(bar, ` ${Math.round(fraction * 100)}%`);
    progress.className = 'progress';
    const status = document.createElement('span');
    status.textContent = job.status;
    status.className = 'status-' + job.status;
    let action = '';
    if (job.status === 'queued' || job.status === 'running') {
      action = document.createElement('button');
      action.type = 'button';
      action.className = 'quiet cancel';
      action.textContent = 'Cancel';
      action.setAttribute('aria-label', `Cancel job ${job.id}`);
      action.addEventListener('click', () => cancelJob(job.id, action));
    }
    cells(row, [link, status, progress, job.class,
                new Date(job.created_at * 1000).toLocaleTimeString(), action]);
  }
  if (openJob) await showJob(openJob.id, openJob.page, false);
}

// A job's counts, errors and one page of its results.
async function showJob(id, page, focus = true) {
  openJob = { id, page };
  const out = $('job-detail');
  const job = await getJson(`/v1/jobs/${encodeURIComponent(id)}`);
  const parts = [];
  const h = document.createElement('h3');
  h.textContent = `${job.id} — ${job.status}`;
  h.tabIndex = -1;
  parts.push(h);
  const c = job.counts || {};
  const p = document.createElement('p');
  p.textContent = `${c.succeeded || 0} succeeded, ${c.failed || 0} failed, ${c.pending || 0} pending ` +
                  `of ${c.total || 0}; ${c.invalid_lines || 0} invalid lines; ${job.pages || 0} pages`;
  parts.push(p);
  if (job.error) parts.push(Object.assign(document.createElement('p'), {
    className: 'error', textContent: `Error: ${job.error.code}: ${job.error.message}` }));
  for (const le of job.line_errors || []) {
    parts.push(Object.assign(document.createElement('p'), {
      className: 'error', textContent: `Line ${le.line}: ${le.code}: ${le.message}` }));
  }
  if (job.pages > 0) {
    try {
      const results = await getJson(`/v1/jobs/${encodeURIComponent(id)}/results?page=${page}`);
      const pre = document.createElement('pre');
      pre.textContent = results.data.map((r) => JSON.stringify(r)).join('\n');
      const nav = document.createElement('div');
      nav.className = 'actions';
      const go = (label, to, enabled) => {
        const b = document.createElement('button');
        b.type = 'button';
        b.className = 'quiet';
        b.textContent = label;
        b.disabled = !enabled;
        b.addEventListener('click', () => showJob(id, to));
        return b;
      };
      nav.append(go('Previous page', page - 1, page > 0),
                 `Page ${page + 1} of ${job.pages}`,
                 go('Next page', page + 1, results.next_page !== null && results.next_page !== undefined));
      parts.push(nav, pre);
    } catch (e) {
      parts.push(Object.assign(document.createElement('p'), { textContent: describeError(e) }));
    }
  }
  out.replaceChildren(...parts);
  if (focus) h.focus();
}

async function submitJob(event) {
  event.preventDefault();
  const file = $('job-file').files[0];
  const out = $('job-message');
  if (!file) {
    out.textContent = 'Choose a batch JSONL file first (one request per line).';
    return;
  }
  try {
    const job = await getJson(`/v1/jobs?class=${encodeURIComponent($('job-class').value)}`, {
      method: 'POST', body: await file.text(), headers: { 'Content-Type': 'application/jsonl' },
    });
    out.textContent = `Submitted ${job.id} (${job.counts.total} requests` +
                      `${job.counts.invalid_lines ? `, ${job.counts.invalid_lines} lines rejected` : ''}).`;
    $('job-file').value = '';
    await refreshJobs();
  } catch (e) {
    out.textContent = describeError(e);
  }
}

async function refreshMachine(measure = false) {
  const s = await getJson('/v1/system' + (measure ? '?measure_bandwidth=1' : ''));
  const k = s.kernels;
  const rows = [
    ['CPU', `${s.cpu.model} (${s.cpu.physical_cores} cores, ${s.cpu.logical_cores} threads)`],
    ['Memory', `${bytes(s.cpu.memory_available_bytes)} free of ${bytes(s.cpu.memory_total_bytes)}`],
    ['Kernel level', `${k.level} (best this CPU runs: ${k.best})${k.override_note ? '; ' + k.override_note : ''}`],
    ['Self-check', k.checked ? `${k.passed} of ${k.checked} kernels agree with the references` +
                               (k.errors.length ? ` — ${k.errors.join('; ')}` : '')
                             : 'scalar reference kernels, nothing to check'],
    ['Memory bandwidth', s.memory_bandwidth
      ? `${s.memory_bandwidth.best_gb_per_s.toFixed(1)} GB/s best, ` +
        `${s.memory_bandwidth.median_gb_per_s.toFixed(1)} GB/s median (${s.memory_bandwidth.threads} threads)`
      : 'not measured yet'],
  ];
  $('dash-machine').replaceChildren(...rows.flatMap(([name, value]) => [
    Object.assign(document.createElement('dt'), { textContent: name }),
    Object.assign(document.createElement('dd'), { textContent: value })]));
}

let machineShown = false;

// One refresh of everything the dashboard shows; throws when the server cannot be reached.
export async function refreshDashboard(models) {
  if (models) showModels(models);
  await Promise.all([refreshMetrics(), refreshJobs(),
                     machineShown ? null : refreshMachine().then(() => { machineShown = true; })]);
}

export function initDashboard() {
  $('job-form').addEventListener('submit', submitJob);
  $('measure-bandwidth').addEventListener('click', async (event) => {
    const b = event.currentTarget;
    b.disabled = true;
    b.textContent = 'Measuring…';
    try {
      await refreshMachine(true);
    } catch (e) {
      $('dash-machine').append(Object.assign(document.createElement('dd'), { textContent: describeError(e) }));
    }
    b.disabled = false;
    b.textContent = 'Measure memory bandwidth';
  });
}
