// Builds the dashboard into dist/, which web.go embeds into the trellis
// binary (served at / with assets under /ui/). `make ui` runs this.
import { defineConfig } from 'vite';

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
});
