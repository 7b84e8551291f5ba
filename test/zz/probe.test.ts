import { describe, it, before, after } from 'node:test';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
for (const dialect of TEST_DIALECTS) {
  describe(dialect, () => {
    let srv: TestServer;
    before(async () => { srv = await startTestServer(dialect); });
    after(() => srv.close());
    it('health', async () => { await srv.api('GET', '/health'); });
  });
}
