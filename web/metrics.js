// SPDX-License-Identifier: Apache-2.0
// Reading the server's /metrics (Prometheus text format 0.0.4) for the dashboard: samples with
// their labels, sums over label sets, and rates between two scrapes (counters may reset when
// the server restarts; a rate across a reset is dropped rather than drawn negative).

// [{name, labels: {k: v}, value}] for every sample line; comments and blank lines skipped.
export function parsePrometheus(text) {
  const samples = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = line.match(/^([a-zA-Z_:][\w:]*)(\{(.*)\})?\s+(\S+)/);
    if (!m) continue;
    const labels = {};
    if (m[3]) {
      for (const l of m[3].matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
        labels[l[1]] = l[2].replace(/\\n/g, '\n').replace(/\\(["\\])/g, '$1');
      }
    }
    const value = m[4] === '+Inf' ? Infinity : m[4] === '-Inf' ? -Infinity : Number(m[4]);
    samples.push({ name: m[1], labels, value });
  }
  return samples;
}

// The sum of `name`'s samples whose labels include every pair of `where`.
export function sumOf(samples, name, where = {}) {
  let total = 0;
  for (const s of samples) {
    if (s.name !== name) continue;
    if (Object.entries(where).every(([k, v]) => s.labels[k] === v)) total += s.value;
  }
  return total;
}

// The distinct values of label `label` among `name`'s samples, sorted.
export function labelValues(samples, name, label) {
  const values = new Set();
  for (const s of samples) if (s.name === name && label in s.labels) values.add(s.labels[label]);
  return [...values].sort();
}

// What the dashboard shows of one scrape, with rates from the previous one (null for the first
// scrape, and for a counter that went down: the server restarted between the two).
export function summarize(samples, previous, seconds) {
  // By class, for the classes the server reports ({} from a server without the metric).
  const perClass = (name) => Object.fromEntries(
    labelValues(samples, name, 'class').map((c) => [c, sumOf(samples, name, { class: c })]));
  const now = {
    queue: perClass('synapse_queue_depth'),
    running: sumOf(samples, 'synapse_active_sequences'),
    runningByClass: perClass('synapse_running_sequences'),
    generated: sumOf(samples, 'synapse_generated_tokens_total'),
    ttftSum: sumOf(samples, 'synapse_time_to_first_token_seconds_sum'),
    ttftCount: sumOf(samples, 'synapse_time_to_first_token_seconds_count'),
    kvInUse: sumOf(samples, 'synapse_kv_pages_in_use'),
    kvTotal: sumOf(samples, 'synapse_kv_pages_total'),
    requests: sumOf(samples, 'synapse_requests_total'),
  };
  now.tokensPerS = null;
  now.ttftS = null;
  if (previous && seconds > 0 && now.generated >= previous.generated) {
    now.tokensPerS = (now.generated - previous.generated) / seconds;
  }
  if (previous && now.ttftCount > previous.ttftCount && now.ttftSum >= previous.ttftSum) {
    // The mean time to first token of the requests that started since the last scrape.
    now.ttftS = (now.ttftSum - previous.ttftSum) / (now.ttftCount - previous.ttftCount);
  }
  return now;
}
