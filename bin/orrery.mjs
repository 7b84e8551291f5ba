#!/usr/bin/env node
// The orrery CLI: the compiled build (dist/, made by `npm install` / `npm run build`) with plain
// node; without a build (a checkout before its first build), the TypeScript sources through tsx.
import { existsSync } from 'node:fs';

const compiled = new URL('../dist/cli.js', import.meta.url);
if (existsSync(compiled)) await import(compiled.href);
else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli.ts');
}
