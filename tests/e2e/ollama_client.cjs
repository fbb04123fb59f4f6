// SPDX-License-Identifier: Apache-2.0
// Drives `synapse serve` with the official Ollama client for JavaScript (npm package `ollama`),
// a client no one here wrote: version, list and show (digest, details, model_info), ps,
// generate and chat (whole and streamed, JSON mode and a schema), embed, and the error of an
// unknown model. Prints one JSON line with what it saw; exits non-zero on the first failed check.
//   NODE_PATH=<prefix>/node_modules SYNAPSE_URL=http://127.0.0.1:PORT SYNAPSE_KEY=... \
//   SYNAPSE_MODEL=name node ollama_client.cjs
'use strict';
const { Ollama } = require('ollama');

function check(condition, what) {
  if (!condition) throw new Error('check failed: ' + what);
}

async function main() {
  const ollama = new Ollama({
    host: process.env.SYNAPSE_URL,
    headers: { Authorization: 'Bearer ' + process.env.SYNAPSE_KEY },
  });
  const model = process.env.SYNAPSE_MODEL;
  const options = { temperature: 0, num_predict: 6, seed: 1 };
  const seen = {};

  const list = await ollama.list();
  const names = list.models.map((m) => m.name);
  check(names.includes(model), 'list has ' + model + ': ' + JSON.stringify(names));
  check(typeof list.models[0].size === 'number', 'list size');
  for (const m of list.models) {
    check(typeof m.digest === 'string', 'list digest of ' + m.name);
    check(typeof m.details.family === 'string' && m.details.family.length > 0,
          'list details.family of ' + m.name + ': ' + JSON.stringify(m.details));
    check(m.details.quantization_level.length > 0, 'list details.quantization_level');
  }
  seen.list = names;

  const show = await ollama.show({ model });
  check(typeof show.template === 'string' && show.template.length > 0, 'show.template');
  check(show.details.format === 'gguf', 'show.details.format');
  check(typeof show.details.family === 'string' && show.details.family.length > 0,
        'show.details.family');
  check(show.details.families[0] === show.details.family, 'show.details.families');
  check(show.details.parameter_size.length > 0, 'show.details.parameter_size');
  check(show.model_info['general.architecture'] === show.details.family,
        'show.model_info general.architecture');
  check(show.capabilities.includes('completion'), 'show.capabilities');
  seen.details = show.details;

  const generated = await ollama.generate({ model, prompt: 'Once upon a time', options });
  check(typeof generated.response === 'string', 'generate.response');
  check(generated.done === true, 'generate.done');
  check(['stop', 'length'].includes(generated.done_reason), 'generate.done_reason');
  check(generated.eval_count > 0 && generated.eval_count <= 6, 'generate.eval_count');
  check(generated.prompt_eval_count > 0, 'generate.prompt_eval_count');
  check(generated.total_duration > 0, 'generate.total_duration');
  seen.generate = generated.response;

  const raw = await ollama.generate({ model, prompt: 'Once upon a time', raw: true, options });
  check(typeof raw.response === 'string' && raw.done, 'raw generate');

  let streamed = '';
  let pieces = 0;
  let last = null;
  for await (const part of await ollama.generate({
    model, prompt: 'Once upon a time', options, stream: true,
  })) {
    if (!part.done) pieces += 1;
    streamed += part.response;
    last = part;
  }
  check(last && last.done && last.eval_count > 0, 'streamed generate ends done');
  check(pieces > 0, 'streamed generate has pieces');
  check(streamed === generated.response, 'streamed text equals the whole answer: ' +
        JSON.stringify([streamed, generated.response]));

  const messages = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello' }];
  const chat = await ollama.chat({ model, messages, options });
  check(chat.message.role === 'assistant', 'chat.message.role');
  check(typeof chat.message.content === 'string', 'chat.message.content');
  check(chat.done === true, 'chat.done');
  let chatText = '';
  for await (const part of await ollama.chat({ model, messages, options, stream: true })) {
    chatText += part.message.content;
  }
  check(chatText === chat.message.content, 'streamed chat equals the whole answer');
  seen.chat = chat.message.content;

  const json = await ollama.chat({
    model, messages, format: 'json', options: { temperature: 0, num_predict: 64 },
  });
  if (json.done_reason === 'stop') JSON.parse(json.message.content);
  const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
  const structured = await ollama.chat({
    model, messages, format: schema, options: { temperature: 0, num_predict: 64 },
  });
  if (structured.done_reason === 'stop') {
    check(Number.isInteger(JSON.parse(structured.message.content).n), 'schema output');
  }
  seen.structured = structured.message.content;

  const tools = [{
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  }];
  const withTools = await ollama.chat({
    model, messages: [{ role: 'user', content: 'Weather in Paris?' }], tools,
    options: { temperature: 0, num_predict: 48 },
  });
  check(withTools.message.role === 'assistant' && withTools.done, 'chat with tools');
  for (const call of withTools.message.tool_calls || []) {
    check(call.function.name === 'get_weather', 'tool call name');
    check(typeof call.function.arguments === 'object', 'tool call arguments are an object');
  }
  const history = await ollama.chat({
    model, tools, options,
    messages: [
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: '',
        tool_calls: [{ function: { name: 'get_weather', arguments: { city: 'Paris' } } }] },
      { role: 'tool', content: '18 C', tool_name: 'get_weather' },
    ],
  });
  check(history.done, 'chat after a tool result');
  seen.tool_calls = (withTools.message.tool_calls || []).length;

  const embedded = await ollama.embed({ model, input: ['hello', 'world'] });
  check(embedded.embeddings.length === 2, 'embed returns two vectors');
  check(embedded.embeddings[0].length > 0, 'embed vector size');
  check(embedded.model === model, 'embed.model');
  const legacy = await ollama.embeddings({ model, prompt: 'hello' });
  check(legacy.embedding.length === embedded.embeddings[0].length, 'embeddings (legacy)');

  const ps = await ollama.ps();
  check(ps.models.some((m) => m.name === model), 'ps lists the loaded model');
  check(typeof ps.models[0].expires_at === 'string', 'ps.expires_at');

  try {
    await ollama.chat({ model: 'no-such-model', messages });
    check(false, 'an unknown model fails');
  } catch (e) {
    check(e.name === 'ResponseError', 'ResponseError: ' + e);
    check(e.status_code === 404, 'status 404: ' + e.status_code);
    check(/not found/.test(e.error), 'message says not found: ' + e.error);
    seen.error = e.error;
  }
  try {
    await ollama.generate({ model, prompt: 'x', images: ['aGk='] });
    check(false, 'images are refused');
  } catch (e) {
    check(e.status_code === 400, 'images: 400');
  }
  console.log(JSON.stringify({ ok: true, seen }));
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
