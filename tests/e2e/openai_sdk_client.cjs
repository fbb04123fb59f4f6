// SPDX-License-Identifier: Apache-2.0
// Drives `synapse serve` with the official OpenAI SDK for Node (npm package `openai`), a client
// no one here wrote: models, completions, chat, streaming (with usage), and an error. Prints one
// JSON line with what it saw; exits non-zero on the first failed check.
//   NODE_PATH=<prefix>/node_modules SYNAPSE_URL=http://127.0.0.1:PORT SYNAPSE_KEY=... \
//   SYNAPSE_MODEL=id node openai_sdk_client.cjs
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
  const seen = {};

  const models = await client.models.list();
  const ids = models.data.map((m) => m.id);
  check(ids.includes(model), 'models.list has ' + model + ': ' + JSON.stringify(ids));
  seen.models = ids;

  const completion = await client.completions.create({
    model, prompt: 'Once upon a time', max_tokens: 8, temperature: 0,
  });
  check(completion.object === 'text_completion', 'completion object');
  check(typeof completion.choices[0].text === 'string', 'completion text');
  check(['stop', 'length'].includes(completion.choices[0].finish_reason), 'finish_reason');
  check(completion.usage.prompt_tokens > 0, 'usage.prompt_tokens');
  check(completion.usage.completion_tokens > 0 && completion.usage.completion_tokens <= 8,
        'usage.completion_tokens');
  seen.completion = completion.choices[0].text;

  // Streaming gives the same greedy text, and the usage chunk when asked.
  const completionStream = await client.completions.create({
    model, prompt: 'Once upon a time', max_tokens: 8, temperature: 0, stream: true,
    stream_options: { include_usage: true },
  });
  let streamed = '';
  let streamUsage = null;
  for await (const chunk of completionStream) {
    if (chunk.usage) streamUsage = chunk.usage;
    if (chunk.choices.length > 0) streamed += chunk.choices[0].text;
  }
  check(streamed === completion.choices[0].text,
        'streamed completion ' + JSON.stringify(streamed) + ' equals ' +
            JSON.stringify(completion.choices[0].text));
  check(streamUsage && streamUsage.completion_tokens === completion.usage.completion_tokens,
        'stream usage');

  const messages = [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'Say hello.' },
  ];
  const chat = await client.chat.completions.create({
    model, messages, max_tokens: 8, temperature: 0, logprobs: true, top_logprobs: 2,
  });
  check(chat.object === 'chat.completion', 'chat object');
  check(chat.choices[0].message.role === 'assistant', 'assistant role');
  check(typeof chat.choices[0].message.content === 'string', 'chat content');
  check(chat.choices[0].logprobs && Array.isArray(chat.choices[0].logprobs.content),
        'chat logprobs');
  seen.chat = chat.choices[0].message.content;

  const chatStream = await client.chat.completions.create({
    model, messages, max_tokens: 8, temperature: 0, stream: true,
  });
  let chatStreamed = '';
  let finish = null;
  for await (const chunk of chatStream) {
    const choice = chunk.choices[0];
    if (choice.delta.content) chatStreamed += choice.delta.content;
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  check(chatStreamed === chat.choices[0].message.content, 'streamed chat equals chat');
  check(finish === chat.choices[0].finish_reason, 'stream finish_reason');

  // Errors arrive as the SDK's typed errors, with our stable code.
  try {
    await client.completions.create({ model: 'no-such-model', prompt: 'x', max_tokens: 1 });
    check(false, 'unknown model must fail');
  } catch (e) {
    check(e.status === 404, 'unknown model status ' + e.status);
    check(e.code === 'model_not_found', 'unknown model code ' + e.code);
  }
  try {
    await client.completions.create({ model, prompt: 'x', max_tokens: -1 });
    check(false, 'negative max_tokens must fail');
  } catch (e) {
    check(e.status === 400 && e.code === 'invalid_value', 'negative max_tokens ' + e.code);
  }
  console.log(JSON.stringify({ ok: true, ...seen }));
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
