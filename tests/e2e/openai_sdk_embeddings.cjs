// SPDX-License-Identifier: Apache-2.0
// Drives `synapse serve` on an embedding model with the official OpenAI SDK for Node (npm
// package `openai`): embeddings.create as users call it (the SDK asks for base64 and decodes it),
// with encoding_format 'float', and with 'base64' left to the caller. Prints one JSON line with
// the vectors it saw; exits non-zero on the first failed check.
//   NODE_PATH=<prefix>/node_modules SYNAPSE_URL=http://127.0.0.1:PORT SYNAPSE_KEY=... \
//   SYNAPSE_MODEL=id SYNAPSE_INPUTS='["a","b"]' node openai_sdk_embeddings.cjs
'use strict';
const sdk = require('openai');
const OpenAI = sdk.OpenAI || sdk.default || sdk;

function check(condition, what) {
  if (!condition) throw new Error('check failed: ' + what);
}

async function main() {
  const client = new OpenAI({
    baseURL: process.env.SYNAPSE_URL + '/v1',
    apiKey: process.env.SYNAPSE_KEY,
    maxRetries: 0,
    timeout: 60000,
  });
  const model = process.env.SYNAPSE_MODEL;
  const input = JSON.parse(process.env.SYNAPSE_INPUTS);
  const seen = {};

  const byDefault = await client.embeddings.create({ model, input });
  check(byDefault.object === 'list', 'object list');
  check(byDefault.data.length === input.length, 'one embedding per input');
  check(byDefault.usage.prompt_tokens > 0, 'usage.prompt_tokens');
  check(byDefault.usage.total_tokens === byDefault.usage.prompt_tokens, 'usage.total_tokens');
  byDefault.data.forEach((d, i) => {
    check(d.object === 'embedding' && d.index === i, 'embedding ' + i);
    check(Array.isArray(d.embedding) && typeof d.embedding[0] === 'number', 'decoded floats');
  });
  seen.default = byDefault.data.map((d) => d.embedding);

  const asFloat = await client.embeddings.create({ model, input, encoding_format: 'float' });
  seen.float = asFloat.data.map((d) => d.embedding);

  const one = await client.embeddings.create({ model, input: input[0], encoding_format: 'base64' });
  check(typeof one.data[0].embedding === 'string', 'base64 left to the caller is a string');
  seen.base64_first = one.data[0].embedding;

  let error = null;
  try {
    await client.embeddings.create({ model, input: [] });
  } catch (e) {
    error = e;
  }
  check(error && error.status === 400, 'empty list: 400');
  seen.error_code = error.code || (error.error && error.error.code);

  seen.ok = true;
  console.log(JSON.stringify(seen));
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
