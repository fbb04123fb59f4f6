// SPDX-License-Identifier: Apache-2.0
// Reading /metrics: the parser, sums over labels, and rates across scrapes and restarts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePrometheus, sumOf, labelValues, summarize } from '../metrics.js';

const scrape = (generated, ttftSum, ttftCount, queued) => parsePrometheus(`
# HELP synapse_queue_depth Requests waiting for a slot, by class.
# TYPE synapse_queue_depth gauge
synapse_queue_depth{class="interactive"} ${queued}
synapse_queue_depth{class="batch"} 2
synapse_active_sequences 3
synapse_running_sequences{class="interactive"} 2
synapse_running_sequences{class="batch"} 1
synapse_running_sequences{class="background"} 0
synapse_generated_tokens_total ${generated}
synapse_time_to_first_token_seconds_bucket{class="interactive",le="+Inf"} ${ttftCount}
synapse_time_to_first_token_seconds_sum{class="interactive"} ${ttftSum}
synapse_time_to_first_token_seconds_count{class="interactive"} ${ttftCount}
synapse_http_requests_total{path="/v1/chat/completions",status="200",model="a \\"b\\""} 7
`);

test('parses samples, labels (with escapes) and +Inf', () => {
  const s = scrape(10, 1, 2, 1);
  assert.deepEqual(s.find((x) => x.name === 'synapse_http_requests_total').labels,
                   { path: '/v1/chat/completions', status: '200', model: 'a "b"' });
  assert.equal(s.find((x) => x.name.endsWith('_bucket')).labels.le, '+Inf');
  assert.equal(sumOf(s, 'synapse_queue_depth'), 3);
  assert.equal(sumOf(s, 'synapse_queue_depth', { class: 'batch' }), 2);
  assert.deepEqual(labelValues(s, 'synapse_queue_depth', 'class'), ['batch', 'interactive']);
});

test('rates between scrapes: tokens/s and the mean time to first token of new requests', () => {
  const first = summarize(scrape(100, 1.0, 4, 0), null, 0);
  assert.equal(first.tokensPerS, null);
  const second = summarize(scrape(150, 2.0, 6, 1), first, 2);
  assert.equal(second.tokensPerS, 25);
  assert.equal(second.ttftS, 0.5);
  assert.deepEqual(second.queue, { batch: 2, interactive: 1 });
  assert.equal(second.running, 3);
  assert.deepEqual(second.runningByClass, { background: 0, batch: 1, interactive: 2 });
});

test('running sequences per class, summed over models, and none from a server without them', () => {
  const twoModels = parsePrometheus(`
synapse_running_sequences{model="a",class="interactive"} 1
synapse_running_sequences{model="b",class="interactive"} 2
synapse_running_sequences{model="b",class="batch"} 1
`);
  assert.deepEqual(summarize(twoModels, null, 0).runningByClass, { batch: 1, interactive: 3 });
  const older = parsePrometheus('synapse_active_sequences 2\nsynapse_queue_depth{class="batch"} 1\n');
  assert.deepEqual(summarize(older, null, 0).runningByClass, {});
  assert.equal(summarize(older, null, 0).running, 2);
});

test('a counter that went down (a restart) gives no rate instead of a negative one', () => {
  const before = summarize(scrape(500, 9, 10, 0), null, 0);
  const after = summarize(scrape(20, 0.1, 1, 0), before, 2);
  assert.equal(after.tokensPerS, null);
  assert.equal(after.ttftS, null);
});
