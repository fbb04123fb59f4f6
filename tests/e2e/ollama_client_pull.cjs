// SPDX-License-Identifier: Apache-2.0
// The official Ollama client for JavaScript pulling from a fake Hugging Face hub through
// `synapse serve`'s /api/pull (streamed progress), then using the pulled model at once
// (generate), copying it (copy, list) and deleting the copy (delete, list). Prints one JSON line;
// exits non-zero on the first failed check.
//   NODE_PATH=... SYNAPSE_URL=... SYNAPSE_KEY=... SYNAPSE_MODEL=hf.co/org/repo node ...
'use strict';
const { Ollama } = require('ollama');

function check(condition, what) {
  if (!condition) throw new Error('check failed: ' + what);
}

async function names(ollama) {
  return (await ollama.list()).models.map((m) => m.name);
}

async function main() {
  const ollama = new Ollama({
    host: process.env.SYNAPSE_URL,
    headers: { Authorization: 'Bearer ' + process.env.SYNAPSE_KEY },
  });
  const ref = process.env.SYNAPSE_MODEL;
  const statuses = [];
  let downloaded = false;
  for await (const p of await ollama.pull({ model: ref, stream: true })) {
    check(!p.error, 'pull error: ' + p.error);
    statuses.push(p.status);
    if (p.total > 0 && p.completed === p.total && p.digest) downloaded = true;
  }
  check(statuses[statuses.length - 1] === 'success', 'pull ends with success: ' + statuses);
  check(downloaded, 'pull reports a downloaded file');
  const pulled = (await names(ollama)).find((n) => n.startsWith(ref));
  check(pulled, 'list has the pulled model: ' + (await names(ollama)));

  const answer = await ollama.generate({
    model: pulled, prompt: 'Once', options: { num_predict: 3, temperature: 0 },
  });
  check(answer.done && answer.eval_count > 0, 'the pulled model generates');

  await ollama.copy({ source: pulled, destination: 'copied' });
  check((await names(ollama)).includes('copied'), 'list has the copy');
  const copied = await ollama.generate({
    model: 'copied', prompt: 'Once', options: { num_predict: 3, temperature: 0 },
  });
  check(copied.response === answer.response, 'the copy answers the same');
  await ollama.delete({ model: 'copied' });
  try {
    await ollama.delete({ model: 'copied' });
    check(false, 'deleting twice fails');
  } catch (e) {
    check(e.status_code === 404, 'second delete: 404, got ' + e.status_code);
  }
  const again = await ollama.pull({ model: 'hf.co/org/no-such-repo', stream: false })
    .then(() => null, (e) => e);
  check(again && again.status_code >= 400, 'pulling a missing repo fails');
  console.log(JSON.stringify({ ok: true, pulled, statuses }));
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
