// SPDX-License-Identifier: Apache-2.0
// Drives OpenAI's batch flow on `synapse serve` with the official OpenAI SDK for Node (npm package
// `openai`): files.create → batches.create → batches.retrieve until completed → files.content of
// the output file (one line per custom_id, OpenAI's output shape) → batches.list, files.list,
// files.retrieve, a second batch cancelled, files.delete, and a 404. Prints one JSON line with
// what it saw; exits non-zero on the first failed check. Run by tests/e2e/jobs_serve_test.cc
// (JobsServeTest.OpenAiSdkBatches) against `synapse serve`; by hand:
//   NODE_PATH=<prefix>/node_modules SYNAPSE_URL=http://127.0.0.1:PORT SYNAPSE_KEY=... \
//   SYNAPSE_MODEL=id [SYNAPSE_BATCH_TIMEOUT_S=300] node openai_sdk_batches.cjs
'use strict';
const sdk = require('openai');
const OpenAI = sdk.OpenAI || sdk.default || sdk;
const toFile = sdk.toFile;

function check(condition, what) {
  if (!condition) throw new Error('check failed: ' + what);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  const client = new OpenAI({
    baseURL: process.env.SYNAPSE_URL + '/v1',
    apiKey: process.env.SYNAPSE_KEY,
    maxRetries: 0,
    timeout: 60000,
  });
  const model = process.env.SYNAPSE_MODEL;
  const timeoutMs = Number(process.env.SYNAPSE_BATCH_TIMEOUT_S || 300) * 1000;
  const seen = {};

  const customIds = ['greet', 'count', 'colour'];
  const prompts = ['Say hello.', 'Count to three.', 'Name a colour.'];
  const lines = customIds.map((id, i) => JSON.stringify({
    custom_id: id, method: 'POST', url: '/v1/chat/completions',
    body: { model, messages: [{ role: 'user', content: prompts[i] }], max_tokens: 8,
            temperature: 0 },
  }));
  const input = lines.join('\n') + '\n';

  const file = await client.files.create({
    file: await toFile(Buffer.from(input), 'batch_input.jsonl'), purpose: 'batch',
  });
  check(file.object === 'file' && file.id.startsWith('file-'), 'file object ' + file.id);
  check(file.bytes === Buffer.byteLength(input), 'file bytes ' + file.bytes);
  check(file.purpose === 'batch', 'file purpose');
  const retrievedFile = await client.files.retrieve(file.id);
  check(retrievedFile.id === file.id && retrievedFile.filename === 'batch_input.jsonl',
        'files.retrieve');

  let batch = await client.batches.create({
    input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h',
    metadata: { suite: 'openai_sdk_batches' },
  });
  check(batch.object === 'batch', 'batch object');
  check(['validating', 'in_progress', 'finalizing', 'completed'].includes(batch.status),
        'batch status ' + batch.status);
  check(batch.request_counts.total === customIds.length, 'request_counts.total');
  check(batch.metadata && batch.metadata.suite === 'openai_sdk_batches', 'metadata kept');
  seen.batch = batch.id;

  const deadline = Date.now() + timeoutMs;
  while (!['completed', 'failed', 'expired', 'cancelled'].includes(batch.status)) {
    check(Date.now() < deadline, 'batch finished within ' + timeoutMs + ' ms (' + batch.status +
                                     ', ' + JSON.stringify(batch.request_counts) + ')');
    await sleep(500);
    batch = await client.batches.retrieve(batch.id);
  }
  check(batch.status === 'completed', 'batch completed, got ' + batch.status + ' ' +
                                          JSON.stringify(batch.errors));
  check(batch.request_counts.completed === customIds.length,
        'all requests completed: ' + JSON.stringify(batch.request_counts));
  check(typeof batch.output_file_id === 'string', 'output_file_id');

  const content = await (await client.files.content(batch.output_file_id)).text();
  const results = content.split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l));
  check(results.length === customIds.length, 'one output line per request: ' + results.length);
  const answered = new Set();
  for (const line of results) {
    check(customIds.includes(line.custom_id), 'known custom_id ' + line.custom_id);
    check(!answered.has(line.custom_id), 'custom_id once ' + line.custom_id);
    answered.add(line.custom_id);
    check(typeof line.id === 'string', 'line id');
    check(line.error === null, 'line error null');
    check(line.response.status_code === 200, 'status_code 200');
    check(line.response.body.object === 'chat.completion', 'chat.completion body');
    check(typeof line.response.body.choices[0].message.content === 'string', 'content');
  }
  seen.answers = Object.fromEntries(
      results.map((l) => [l.custom_id, l.response.body.choices[0].message.content]));
  const outputFile = await client.files.retrieve(batch.output_file_id);
  check(outputFile.purpose === 'batch_output' && outputFile.bytes === Buffer.byteLength(content),
        'output file object');

  const listed = await client.batches.list({ limit: 10 });
  check(listed.data.some((b) => b.id === batch.id), 'batches.list has the batch');
  const files = await client.files.list();
  check(files.data.some((f) => f.id === file.id), 'files.list has the upload');

  // A second batch, cancelled (it may already have finished on a fast machine).
  const second = await client.batches.create({
    input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h',
  });
  check(second.id !== batch.id, 'each create is a new batch');
  const cancelled = await client.batches.cancel(second.id);
  check(['cancelling', 'cancelled', 'completed'].includes(cancelled.status),
        'cancel status ' + cancelled.status);

  const remove = client.files.delete ? client.files.delete.bind(client.files)
                                     : client.files.del.bind(client.files);
  const deleted = await remove(file.id);
  check(deleted.deleted === true && deleted.id === file.id, 'files.delete');
  try {
    await client.files.retrieve(file.id);
    check(false, 'a deleted file must be gone');
  } catch (e) {
    check(e.status === 404, 'deleted file status ' + e.status);
  }
  try {
    await client.batches.retrieve('batch_does_not_exist');
    check(false, 'an unknown batch must fail');
  } catch (e) {
    check(e.status === 404 && e.code === 'job_not_found', 'unknown batch ' + e.code);
  }
  console.log(JSON.stringify({ ok: true, ...seen }));
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
