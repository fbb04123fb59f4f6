// SPDX-License-Identifier: Apache-2.0
// Structured outputs through the official OpenAI SDK for Node against `synapse serve` on a
// random-weight model, so only the constraint can make the output right:
//   - response_format json_schema (strict) for 50 bounded schemas of the MaskBench fixture
//     (bounds added where a schema has none, see withBounds): every reply parses and validates
//     with ajv;
//   - json_object gives a JSON object; zodResponseFormat + chat.completions.parse works;
//   - tools with tool_choice "required" and a named function give tool_calls whose arguments
//     validate against the function's parameters, the same whether streamed or not.
// Prints one JSON line with what it saw; exits non-zero on the first failed check.
//   NODE_PATH=<prefix>/node_modules SYNAPSE_URL=... SYNAPSE_KEY=... SYNAPSE_MODEL=...
//   SYNAPSE_MASKBENCH=<fixtures>/schemas/maskbench node openai_sdk_structured.cjs
'use strict';
const fs = require('fs');
const path = require('path');
const sdk = require('openai');
const OpenAI = sdk.OpenAI || sdk.default || sdk;
const { zodResponseFormat } = require('openai/helpers/zod');
const { z } = require('zod');
const Ajv = require('ajv').default;
const Ajv2020 = require('ajv/dist/2020').default;
const addFormats = require('ajv-formats').default || require('ajv-formats');

function check(condition, what) {
  if (!condition) throw new Error('check failed: ' + what);
}

// A schema whose instances are short: strings with a maxLength (or a fixed-length format),
// arrays with a small maxItems, objects closed with additionalProperties false, enums,
// consts, booleans, null and integers with both bounds (a random model may repeat one digit
// forever, so unbounded numbers are not short). A random model then ends far within
// max_tokens, so a reply cut short is a failure, not bad luck.
function bounded(s, depth) {
  if (depth > 5 || s === null || typeof s !== 'object' || Array.isArray(s)) return false;
  for (const k of ['$ref', 'allOf', 'not', 'if', 'patternProperties', 'dependencies',
                   'dependentSchemas', 'unevaluatedProperties', 'contains']) {
    if (k in s) return false;
  }
  if (Array.isArray(s.enum) || 'const' in s) return true;
  const branches = s.anyOf || s.oneOf;
  if (branches) return Array.isArray(branches) && branches.every((b) => bounded(b, depth + 1));
  const types = Array.isArray(s.type) ? s.type : (s.type ? [s.type] : null);
  if (!types) return false;
  return types.every((t) => {
    switch (t) {
      case 'null': case 'boolean': return true;
      case 'integer': return typeof s.minimum === 'number' && typeof s.maximum === 'number';
      case 'string':
        return (typeof s.maxLength === 'number' && s.maxLength <= 64) ||
               ['date', 'uuid', 'ipv4', 'time', 'date-time'].includes(s.format);
      case 'array':
        return typeof s.maxItems === 'number' && s.maxItems <= 4 && !s.prefixItems &&
               s.items !== undefined && bounded(s.items, depth + 1);
      case 'object':
        return s.additionalProperties === false && s.properties &&
               Object.values(s.properties).every((p) => bounded(p, depth + 1));
      default: return false;
    }
  });
}

// The fixture's schema with bounds added where it has none, so that more real schemas qualify:
// strings get maxLength 24, integers [-1000, 1000], arrays maxItems 3, objects are closed. What
// a schema already says is kept; a schema with a non-integer number stays unbounded.
function withBounds(schema) {
  const s = JSON.parse(JSON.stringify(schema));
  const visit = (n) => {
    if (n === null || typeof n !== 'object' || Array.isArray(n)) return;
    const types = Array.isArray(n.type) ? n.type : (n.type ? [n.type] : []);
    if (types.includes('string') && n.maxLength === undefined && !n.enum && !('const' in n) &&
        !n.format) n.maxLength = 24;
    if (types.includes('integer')) {
      if (typeof n.minimum !== 'number') n.minimum = Math.min(-1000, n.maximum ?? -1000);
      if (typeof n.maximum !== 'number') n.maximum = Math.max(1000, n.minimum);
    }
    if (types.includes('array') && n.maxItems === undefined) n.maxItems = Math.max(3, n.minItems ?? 0);
    if (types.includes('object') && n.additionalProperties === undefined) n.additionalProperties = false;
    for (const key of ['items', 'additionalProperties']) {
      if (n[key] && typeof n[key] === 'object') visit(n[key]);
    }
    for (const key of ['properties', '$defs', 'definitions']) {
      if (n[key] && typeof n[key] === 'object') Object.values(n[key]).forEach(visit);
    }
    for (const key of ['anyOf', 'oneOf', 'allOf', 'prefixItems']) {
      if (Array.isArray(n[key])) n[key].forEach(visit);
    }
  };
  visit(s);
  return s;
}

function validatorFor(schema) {
  // ajv knows draft-07 and 2020-12; older drafts' $schema URIs are dropped (their keywords
  // mean the same in draft-07 except exclusive bounds, which these schemas do not use).
  const opts = { strict: false, allErrors: false, validateFormats: true, validateSchema: false };
  const is2020 = String(schema.$schema || '').includes('2020-12');
  const copy = JSON.parse(JSON.stringify(schema));
  delete copy.$schema;
  const ajv = is2020 ? new Ajv2020(opts) : new Ajv(opts);
  addFormats(ajv);
  return ajv.compile(copy);
}

async function main() {
  const client = new OpenAI({
    baseURL: process.env.SYNAPSE_URL + '/v1', apiKey: process.env.SYNAPSE_KEY,
    maxRetries: 0, timeout: 120000,
  });
  const model = process.env.SYNAPSE_MODEL;
  const seen = { schemas: 0, refused: 0, ajv_skipped: 0 };
  const messages = [{ role: 'user', content: 'Answer in JSON.' }];

  // 1. json_schema, strict, on bounded fixture schemas.
  const dir = process.env.SYNAPSE_MASKBENCH;
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.jsonl')).sort();
  outer: for (const file of files) {
    for (const line of fs.readFileSync(path.join(dir, file), 'utf8').split('\n')) {
      if (!line) continue;
      const record = JSON.parse(line);
      const schema = withBounds(record.schema);
      if (!bounded(schema, 0) || schema.type !== 'object') continue;
      let validate;
      try { validate = validatorFor(schema); } catch (e) { seen.ajv_skipped++; continue; }
      let reply;
      try {
        reply = await client.chat.completions.create({
          model, messages, max_tokens: 3000, seed: 7, temperature: 1,
          response_format: { type: 'json_schema', json_schema: { name: 'out', schema, strict: true } },
        });
      } catch (e) {
        // A schema the compiler refuses is a 400 naming the keyword; anything else fails.
        check(e.status === 400 && /unsupported_schema|schema_too_complex/.test(JSON.stringify(e.error)),
              record.id + ': ' + e.message);
        seen.refused++;
        continue;
      }
      const choice = reply.choices[0];
      check(choice.finish_reason === 'stop', record.id + ': finish_reason ' + choice.finish_reason +
            ' after ' + JSON.stringify(choice.message.content).slice(0, 200));
      let value;
      try { value = JSON.parse(choice.message.content); } catch (e) {
        throw new Error(record.id + ': reply does not parse: ' + choice.message.content);
      }
      check(validate(value), record.id + ': ajv refuses ' + choice.message.content + ' ' +
            JSON.stringify(validate.errors));
      if (++seen.schemas === 50) break outer;
    }
  }
  check(seen.schemas === 50, '50 bounded schemas answered and valid, got ' + seen.schemas +
        ' (' + seen.refused + ' refused by the compiler, ' + seen.ajv_skipped + ' not for ajv)');

  // 2. json_object.
  const obj = await client.chat.completions.create({
    model, messages, max_tokens: 3000, seed: 3, response_format: { type: 'json_object' },
  });
  check(obj.choices[0].finish_reason === 'stop', 'json_object ends: ' + obj.choices[0].finish_reason);
  const value = JSON.parse(obj.choices[0].message.content);
  check(value !== null && typeof value === 'object' && !Array.isArray(value),
        'json_object gives an object: ' + obj.choices[0].message.content);
  seen.json_object = obj.choices[0].message.content.slice(0, 80);

  // 3. zod through the SDK's parse helper.
  const Person = z.object({
    name: z.string().max(12),
    age: z.number().int().min(0).max(120),
    role: z.enum(['admin', 'user']),
  });
  const parsed = await client.chat.completions.parse({
    model, messages, max_tokens: 400, seed: 5,
    response_format: zodResponseFormat(Person, 'person'),
  });
  const person = parsed.choices[0].message.parsed;
  check(person && typeof person.name === 'string' && Number.isInteger(person.age) &&
        ['admin', 'user'].includes(person.role), 'zod parse: ' + JSON.stringify(person));
  seen.zod = person;

  // 4. Tools: required and named; streamed equals assembled.
  const parameters = {
    type: 'object',
    properties: {
      city: { type: 'string', maxLength: 16 },
      days: { type: 'integer', minimum: 1, maximum: 7 },
      unit: { enum: ['c', 'f'] },
    },
    required: ['city', 'days'],
    additionalProperties: false,
  };
  const tools = [
    { type: 'function', function: { name: 'get_weather', description: 'Weather', parameters } },
    { type: 'function', function: { name: 'get_time', parameters: {
      type: 'object', properties: { zone: { type: 'string', maxLength: 8 } },
      required: ['zone'], additionalProperties: false } } },
  ];
  const validateWeather = validatorFor(parameters);
  for (const tool_choice of ['required', { type: 'function', function: { name: 'get_weather' } }]) {
    const request = {
      model, messages: [{ role: 'user', content: 'Weather in Paris?' }], tools, tool_choice,
      max_tokens: 600, seed: 11, parallel_tool_calls: false,
    };
    const whole = await client.chat.completions.create(request);
    const choice = whole.choices[0];
    check(choice.finish_reason === 'tool_calls', 'finish_reason tool_calls: ' + JSON.stringify(choice));
    const calls = choice.message.tool_calls;
    check(Array.isArray(calls) && calls.length === 1, 'one tool call: ' + JSON.stringify(calls));
    check(calls[0].type === 'function' && typeof calls[0].id === 'string', 'call shape');
    const args = JSON.parse(calls[0].function.arguments);
    if (typeof tool_choice === 'object' || calls[0].function.name === 'get_weather') {
      check(calls[0].function.name === 'get_weather', 'named function');
      check(validateWeather(args), 'arguments validate: ' + calls[0].function.arguments);
    } else {
      check(calls[0].function.name === 'get_time' && typeof args.zone === 'string', 'get_time args');
    }
    // The same request streamed: OpenAI's deltas assemble to the same call.
    const stream = await client.chat.completions.create({ ...request, stream: true });
    const assembled = [];
    let finish = null;
    for await (const chunk of stream) {
      const c = chunk.choices[0];
      if (!c) continue;
      if (c.finish_reason) finish = c.finish_reason;
      for (const d of (c.delta.tool_calls || [])) {
        if (!assembled[d.index]) {
          check(d.id && d.function && d.function.name, 'first delta carries id and name');
          assembled[d.index] = { name: d.function.name, arguments: '' };
        }
        assembled[d.index].arguments += (d.function && d.function.arguments) || '';
      }
    }
    check(finish === 'tool_calls', 'streamed finish_reason');
    check(assembled.length === 1 && assembled[0].name === calls[0].function.name &&
          assembled[0].arguments === calls[0].function.arguments,
          'streamed ' + JSON.stringify(assembled) + ' equals ' + JSON.stringify(calls));
    seen[typeof tool_choice === 'string' ? 'required' : 'named'] = calls[0].function;
  }
  // 5. auto on a real chat template (Qwen 2.5's, with its <tool_call> token): the reply is free
  // until the model writes the trigger, then the call's grammar applies and the reply is read
  // back into tool_calls. A logit bias on the trigger token makes the random model write it.
  if (process.env.SYNAPSE_QWEN_URL) {
    const qwen = new OpenAI({
      baseURL: process.env.SYNAPSE_QWEN_URL + '/v1', apiKey: process.env.SYNAPSE_KEY,
      maxRetries: 0, timeout: 120000,
    });
    const request = {
      model: 'qwen', messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [tools[0]], tool_choice: 'auto', parallel_tool_calls: false, max_tokens: 300,
      seed: 1, logit_bias: { [process.env.SYNAPSE_TOOL_CALL_TOKEN]: 100 },
    };
    const reply = await qwen.chat.completions.create(request);
    const choice = reply.choices[0];
    check(choice.finish_reason === 'tool_calls', 'auto: the model called: ' + JSON.stringify(choice));
    const call = choice.message.tool_calls[0];
    check(call.function.name === 'get_weather' &&
          validateWeather(JSON.parse(call.function.arguments)), 'auto: arguments validate');
    // Without the bias the random model answers in text (no trigger): content, no calls.
    const plain = await qwen.chat.completions.create({ ...request, logit_bias: undefined });
    check(plain.choices[0].message.tool_calls === undefined &&
          typeof plain.choices[0].message.content === 'string', 'auto without a call is text');
    seen.auto = call.function;
  }
  console.log(JSON.stringify({ ok: true, ...seen }));
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
