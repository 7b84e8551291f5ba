// Preloaded into the server process of the fuzz suite (NODE_OPTIONS=--import): every DNS lookup
// of a name fails, so a generated endpoint name can never send a query, or traffic, off the
// machine. Address literals and localhost (what the server listens on) resolve as usual.
import dns from 'node:dns';
import { isIP } from 'node:net';
import { syncBuiltinESMExports } from 'node:module';

const local = (host) => isIP(host) !== 0 || host === 'localhost';
const refuse = (host) =>
  Object.assign(new Error(`getaddrinfo ENOTFOUND ${host} (the fuzz suite resolves no names)`), {
    code: 'ENOTFOUND',
    hostname: host,
  });
const lookup = dns.lookup;
const lookupAsync = dns.promises.lookup;
dns.lookup = (host, options, callback) => {
  if (local(host)) return lookup(host, options, callback);
  (typeof options === 'function' ? options : callback)(refuse(host));
};
dns.promises.lookup = async (host, options) => {
  if (local(host)) return lookupAsync(host, options);
  throw refuse(host);
};
syncBuiltinESMExports();
