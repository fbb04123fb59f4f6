// SPDX-License-Identifier: Apache-2.0
// A small Markdown renderer for model replies. Safety first: the text is HTML-escaped before
// any markup is recognized, so a reply can never inject elements or attributes; links keep only
// http(s) and mailto URLs, and images become links (the page loads nothing a reply names).
// Covers what models write: fenced and inline code, headings, lists, block quotes, emphasis,
// links, horizontal rules, paragraphs. Not CommonMark: no nested lists, tables or raw HTML.

export function escapeHtml(text) {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

// A link target from escaped text, or '' when its scheme is not allowed.
function safeUrl(escaped) {
  return /^(https?:\/\/|mailto:)/i.test(escaped) ? escaped : '';
}

// Inline markup of one escaped line. Code spans are cut out first so nothing inside them is
// read as markup.
function inline(escaped) {
  const codes = [];
  let s = escaped.replace(/`([^`]+)`/g, (_, c) => {
    codes.push(c);
    return `\u0000${codes.length - 1}\u0000`;
  });
  s = s.replace(/!?\[([^\]]*)\]\(([^)\s]+)\)/g, (whole, text, url) => {
    const href = safeUrl(url);
    return href ? `<a href="${href}" rel="noopener noreferrer" target="_blank">${text || href}</a>` : whole;
  });
  s = s.replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>')
    .replace(/__([^_]+)__/g, '<strong>$1</strong>')
    .replace(/(^|[^*])\*([^*\s][^*]*)\*/g, '$1<em>$2</em>')
    .replace(/(^|[^\w_])_([^_\s][^_]*)_(?!\w)/g, '$1<em>$2</em>')
    .replace(/~~([^~]+)~~/g, '<del>$1</del>');
  return s.replace(/\u0000(\d+)\u0000/g, (_, i) => `<code>${codes[Number(i)]}</code>`);
}

export function renderMarkdown(text) {
  const lines = escapeHtml(text.replace(/\r\n?/g, '\n')).split('\n');
  const out = [];
  let paragraph = [];
  let list = null;  // 'ul' or 'ol' while inside a list
  const flushParagraph = () => {
    if (paragraph.length) out.push(`<p>${paragraph.map(inline).join('<br>')}</p>`);
    paragraph = [];
  };
  const closeList = () => {
    if (list) out.push(`</${list}>`);
    list = null;
  };
  for (let i = 0; i < lines.length; ++i) {
    const line = lines[i];
    const fence = line.match(/^\s*(```|~~~)\s*([\w+#.-]*)\s*$/);
    if (fence) {
      flushParagraph();
      closeList();
      const body = [];
      // An unclosed fence (a reply still streaming) runs to the end of the text.
      while (++i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i]);
      const lang = fence[2] ? ` class="language-${fence[2]}"` : '';
      out.push(`<pre><code${lang}>${body.join('\n')}</code></pre>`);
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    const bullet = line.match(/^\s*[-*+]\s+(.*)$/);
    const numbered = line.match(/^\s*\d+[.)]\s+(.*)$/);
    if (heading) {
      flushParagraph();
      closeList();
      const level = heading[1].length;
      out.push(`<h${level}>${inline(heading[2])}</h${level}>`);
    } else if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flushParagraph();
      closeList();
      out.push('<hr>');
    } else if (bullet || numbered) {
      flushParagraph();
      const kind = bullet ? 'ul' : 'ol';
      if (list !== kind) {
        closeList();
        out.push(`<${kind}>`);
        list = kind;
      }
      out.push(`<li>${inline((bullet || numbered)[1])}</li>`);
    } else if (line.startsWith('&gt;')) {
      flushParagraph();
      closeList();
      out.push(`<blockquote>${inline(line.replace(/^&gt;\s?/, ''))}</blockquote>`);
    } else if (line.trim() === '') {
      flushParagraph();
      closeList();
    } else {
      closeList();
      paragraph.push(line);
    }
  }
  flushParagraph();
  closeList();
  return out.join('');
}
