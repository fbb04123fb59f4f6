// SPDX-License-Identifier: Apache-2.0
// The Markdown renderer: markup it must produce, and markup a reply must never get through.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderMarkdown, escapeHtml } from '../markdown.js';

test('escapes HTML before anything else', () => {
  assert.equal(renderMarkdown('<script>alert(1)</script>'),
               '<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>');
  assert.equal(renderMarkdown('<img src=x onerror="alert(1)">'),
               '<p>&lt;img src=x onerror=&quot;alert(1)&quot;&gt;</p>');
  assert.equal(escapeHtml(`&<>"'`), '&amp;&lt;&gt;&quot;&#39;');
});

test('links keep only http(s) and mailto targets', () => {
  assert.match(renderMarkdown('[a](https://example.com/x)'),
               /<a href="https:\/\/example.com\/x" rel="noopener noreferrer" target="_blank">a<\/a>/);
  assert.equal(renderMarkdown('[a](javascript:alert(1))'), '<p>[a](javascript:alert(1))</p>');
  assert.doesNotMatch(renderMarkdown('[x](https://a.b/" onmouseover="y)'), /" onmouseover/);
});

test('images become links, so a reply cannot make the page load anything', () => {
  const html = renderMarkdown('![cat](https://example.com/cat.png)');
  assert.doesNotMatch(html, /<img/);
  assert.match(html, /<a href="https:\/\/example.com\/cat.png"/);
});

test('fenced code keeps its text verbatim, escaped, with its language', () => {
  assert.equal(renderMarkdown('```js\nif (a < b) { **x** }\n```'),
               '<pre><code class="language-js">if (a &lt; b) { **x** }</code></pre>');
});

test('an unclosed fence (a reply still streaming) runs to the end', () => {
  assert.equal(renderMarkdown('Look:\n```\nline 1\nline 2'),
               '<p>Look:</p><pre><code>line 1\nline 2</code></pre>');
});

test('inline code is not read as markup', () => {
  assert.equal(renderMarkdown('use `a*b*c` and *this*'),
               '<p>use <code>a*b*c</code> and <em>this</em></p>');
});

test('headings, lists, quotes, rules and paragraphs', () => {
  assert.equal(renderMarkdown('# Title\n\n- one\n- **two**\n\n1. first\n2. second'),
               '<h1>Title</h1><ul><li>one</li><li><strong>two</strong></li></ul>' +
               '<ol><li>first</li><li>second</li></ol>');
  assert.equal(renderMarkdown('> quoted\n\n---\ntext\nmore'),
               '<blockquote>quoted</blockquote><hr><p>text<br>more</p>');
});

test('snake_case words are not emphasis', () => {
  assert.equal(renderMarkdown('call my_function_name now'), '<p>call my_function_name now</p>');
});
