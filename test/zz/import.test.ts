import { it } from 'node:test';
import { TEST_DIALECTS } from '../support/server.ts';
it('nothing', () => { void TEST_DIALECTS; });
