// SPDX-License-Identifier: Apache-2.0
// The embeddings and rerank tab: vectors from /v1/embeddings (size, norm, first values, and the
// cosine similarity of every pair of texts) and relevance scores from /v1/rerank.
import { getJson, describeError } from './api.js';

const $ = (id) => document.getElementById(id);

function lines(id) {
  return $(id).value.split('\n').map((l) => l.trim()).filter(Boolean);
}

function cosine(a, b) {
  let dot = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; ++i) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return na && nb ? dot / Math.sqrt(na * nb) : 0;
}

function table(head, rows) {
  const t = document.createElement('table');
  const tr = document.createElement('tr');
  for (const h of head) tr.append(Object.assign(document.createElement('th'), { textContent: h }));
  t.createTHead().append(tr);
  const body = t.createTBody();
  for (const row of rows) {
    const r = body.insertRow();
    for (const cell of row) r.insertCell().textContent = cell;
  }
  return t;
}

async function embed(event) {
  event.preventDefault();
  const out = $('embed-result');
  const input = lines('embed-input');
  out.textContent = 'Embedding…';
  try {
    const res = await getJson('/v1/embeddings', {
      method: 'POST', json: { model: $('embed-model').value, input },
    });
    const vectors = res.data.sort((a, b) => a.index - b.index).map((d) => d.embedding);
    const rows = vectors.map((v, i) => [
      input[i], String(v.length), Math.hypot(...v).toFixed(4),
      v.slice(0, 4).map((x) => x.toFixed(4)).join(', ') + (v.length > 4 ? ', …' : ''),
    ]);
    const parts = [table(['Text', 'Size', 'Norm', 'First values'], rows)];
    if (vectors.length > 1) {
      const sims = [];
      for (let i = 0; i < vectors.length; ++i) {
        for (let j = i + 1; j < vectors.length; ++j) {
          sims.push([input[i], input[j], cosine(vectors[i], vectors[j]).toFixed(4)]);
        }
      }
      parts.push(table(['Text', 'Text', 'Cosine similarity'], sims));
    }
    const usage = document.createElement('p');
    usage.textContent = `${res.usage ? res.usage.prompt_tokens : '?'} tokens`;
    out.replaceChildren(...parts, usage);
  } catch (e) {
    out.textContent = describeError(e);
  }
}

async function rerank(event) {
  event.preventDefault();
  const out = $('rerank-result');
  const documents = lines('rerank-docs');
  out.textContent = 'Ranking…';
  try {
    const res = await getJson('/v1/rerank', {
      method: 'POST',
      json: { model: $('rerank-model').value, query: $('rerank-query').value, documents },
    });
    const list = document.createElement('ol');
    list.className = 'scores';
    const scores = res.results.map((r) => r.relevance_score);
    const max = Math.max(...scores.map(Math.abs), 1e-9);
    for (const r of res.results) {
      const li = document.createElement('li');
      const bar = document.createElement('span');
      bar.className = 'bar';
      bar.style.width = `${Math.max(2, (Math.abs(r.relevance_score) / max) * 120)}px`;
      li.append(bar, `${r.relevance_score.toFixed(4)} — ${documents[r.index]}`);
      list.append(li);
    }
    out.replaceChildren(list);
  } catch (e) {
    out.textContent = describeError(e);
  }
}

export function initEmbed() {
  $('embed-form').addEventListener('submit', embed);
  $('rerank-form').addEventListener('submit', rerank);
}

// Embedding models first for embeddings (any model can embed), rerank models for rerank.
export function setEmbedModels(models) {
  const fill = (select, ids) => {
    const keep = select.value;
    select.replaceChildren(...ids.map((id) => new Option(id, id)));
    if (ids.includes(keep)) select.value = keep;
  };
  const by = (kind) => models.filter((m) => m.kind === kind).map((m) => m.id);
  fill($('embed-model'), [...by('embedding'), ...by('generation')]);
  const rerankers = by('rerank');
  fill($('rerank-model'), rerankers);
  $('rerank-form').querySelector('button').disabled = rerankers.length === 0;
  if (!rerankers.length) $('rerank-result').textContent = 'No rerank model is served.';
}
