// Builds the dashboard into dist/, which web.go embeds into the trellis
// binary (served at / with assets under /ui/). `make ui` runs this.
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { defineConfig } from 'vite';

// The files the build is made from; web/source_test.go hashes the same
// ones the same way, so a change to them without `make ui` fails a test.
const SOURCES = ['index.html', 'package.json', 'package-lock.json', 'vite.config.js', 'src'];

function files(path) {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path).flatMap((name) => files(join(path, name)));
}

function sourceHash(root) {
  const paths = SOURCES.flatMap((p) => files(join(root, p))).map((p) => relative(root, p).split(sep).join('/'));
  paths.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const h = createHash('sha256');
  for (const p of paths) {
    h.update(p + '\0');
    h.update(readFileSync(join(root, p)));
    h.update('\0');
  }
  return h.digest('hex');
}

export default defineConfig({
  base: '/ui/',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    chunkSizeWarningLimit: 600,
    modulePreload: { polyfill: false },
  },
  plugins: [
    {
      name: 'trellis-source-hash',
      generateBundle() {
        this.emitFile({ type: 'asset', fileName: 'source.sha256', source: sourceHash(import.meta.dirname) + '\n' });
      },
    },
  ],
});
