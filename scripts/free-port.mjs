// A free TCP port on loopback, for the test and benchmark harnesses (servers, PostgreSQL).
import { createServer } from 'node:net';

/** @returns {Promise<number>} */
export const freePort = () =>
  new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {import('node:net').AddressInfo} */ (srv.address());
      srv.close(() => resolve(port));
    });
  });
