// Markdown from the log (checkpoints written by workers) rendered as HTML.
// Anything read from the log is untrusted: raw HTML inside the Markdown is
// never parsed as HTML, it is shown as the text it is (so no element with
// an inline handler exists at any moment, not even in the document the
// sanitizer parses), and DOMPurify then removes what Markdown itself can
// produce that is unwanted (javascript: links, images: an image URL would
// make the browser send a request).

import { Marked } from 'marked';
import DOMPurify from 'dompurify';

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A' && node.hasAttribute('href')) {
    node.setAttribute('rel', 'noopener noreferrer nofollow');
    node.setAttribute('target', '_blank');
  }
});

const escapes = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHTML(s) {
  return String(s).replace(/[&<>"']/g, (c) => escapes[c]);
}

// Headings start at h3: the page has its own h1 and h2. Raw HTML (block or
// inline) is rendered as escaped text. A line break is kept (breaks): a
// checkpoint's fields (**Created:**, **Status:**, ...) are one per line.
const md = new Marked({
  async: false,
  gfm: true,
  breaks: true,
  walkTokens(token) {
    if (token.type === 'heading') token.depth = Math.min(6, token.depth + 2);
  },
  renderer: {
    html(token) {
      return escapeHTML(token.text);
    },
  },
});

export function renderMarkdown(text) {
  const html = md.parse(text || '');
  return DOMPurify.sanitize(html, {
    USE_PROFILES: { html: true },
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'iframe', 'object', 'embed', 'svg', 'math', 'img', 'picture', 'video', 'audio', 'source', 'link', 'meta', 'base'],
    FORBID_ATTR: ['style', 'srcset'],
  });
}

export function Markdown({ text, label }) {
  return <div class="markdown" aria-label={label} dangerouslySetInnerHTML={{ __html: renderMarkdown(text) }} />;
}
