import { it } from 'node:test';
it('nothing', () => {});
