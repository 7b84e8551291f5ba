// The console's build (scripts/build-console.mjs runs it) and dev server (`npm run dev:console`).
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';

// The dev server proxies the API to a running Orrery (`npm run dev` or `npm start`).
const target = process.env.ORRERY_URL ?? 'http://127.0.0.1:8080';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  plugins: [react()],
  build: {
    outDir: 'dist',
    assetsDir: 'assets',
    emptyOutDir: true,
    sourcemap: false,
    // Nothing inlined as data: URLs into scripts; every asset is a hashed file of our own.
    assetsInlineLimit: 0,
    chunkSizeWarningLimit: 800,
  },
  server: {
    proxy: { '/api': { target, changeOrigin: false } },
  },
});
