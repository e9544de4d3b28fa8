// Vite builds the console into dist/console/ (scripts/build.mjs passes outDir),
// served by the API at /ui. No inline script or style may come out of it: the
// API's Content-Security-Policy allows only files from its own origin.
import { defineConfig } from 'vite';

export default defineConfig({
  root: import.meta.dirname,
  base: '/ui/',
  // Preact's automatic JSX runtime (no React, no compat layer).
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    target: 'es2022',
    // Vite's modulepreload polyfill is injected as code, not an inline script; modern browsers need none.
    modulePreload: { polyfill: false },
    // Never inline assets as data: URLs into CSS or JS (the CSP allows data: images only).
    assetsInlineLimit: 0,
    sourcemap: false,
    emptyOutDir: true,
    reportCompressedSize: false,
  },
  // `vite` (npm run dev in services/console) proxies the API, so the dev server's pages reach it on one origin.
  server: { proxy: { '/v1': 'http://127.0.0.1:8080' } },
});
