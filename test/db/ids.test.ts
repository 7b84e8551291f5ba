import { it } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../../src/db/ids.ts';

it('makes unique, well-formed ids that sort in creation order, also within one millisecond', () => {
  const ids = Array.from({ length: 50_000 }, newId);
  assert.equal(new Set(ids).size, ids.length);
  for (const id of ids) assert.match(id, /^[0-9a-hjkmnp-tv-z]{26}$/);
  for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1], `${ids[i]} sorts after ${ids[i - 1]}`);
});

it('encodes the creation time in the first ten characters', async () => {
  const before = newId().slice(0, 10);
  await new Promise((r) => setTimeout(r, 5));
  const after = newId().slice(0, 10);
  assert.ok(after > before);
  const alphabet = '0123456789abcdefghjkmnpqrstvwxyz';
  const ms = [...after].reduce((t, c) => t * 32 + alphabet.indexOf(c), 0);
  assert.ok(Math.abs(ms - Date.now()) < 1000, 'decodes to now');
});
