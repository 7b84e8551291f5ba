/**
 * Preloaded into the Portkey gateway by the peer benchmark (`node --import`): it has a port flag
 * but no host flag and listens on every interface; this makes every server of that process listen
 * on 127.0.0.1 only, so the benchmark stays on loopback.
 */
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'number' || (typeof args[0] === 'string' && /^\d+$/.test(args[0]))) {
    const rest = args.slice(1);
    if (rest.length && (typeof rest[0] === 'string' || rest[0] === undefined || rest[0] === null)) rest.shift();
    return listen.call(this, Number(args[0]), '127.0.0.1', ...rest);
  }
  if (args[0] && typeof args[0] === 'object' && 'port' in args[0])
    return listen.call(this, { ...args[0], host: '127.0.0.1' }, ...args.slice(1));
  return listen.apply(this, args);
};
