// Markdown from the log (checkpoints written by workers) rendered as HTML
// only after DOMPurify has removed scripts, event handlers, styles, forms
// frames and media (an image URL would make the browser send a request):
// anything read from the log is untrusted.

import { Marked } from 'marked';
import DOMPurify from 'dompurify';

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A' && node.hasAttribute('href')) {
    node.setAttribute('rel', 'noopener noreferrer nofollow');
    node.setAttribute('target', '_blank');
  }
});

// Headings start at h3: the page has its own h1 and h2.
const md = new Marked({
  async: false,
  gfm: true,
  walkTokens(token) {
    if (token.type === 'heading') token.depth = Math.min(6, token.depth + 2);
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
