/**
 * Last line of defence for `orrery serve`: an exception or rejection that no code caught is
 * logged with its stack and counted (orrery_uncaught_errors_total), and the server keeps
 * serving. Without these handlers Node exits at once, and every tenant loses the server for a
 * fault in one request's code path (issue 14: a throw inside a metrics timer took it down).
 * Alert on the counter: each increment is a defect to fix.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Metrics } from './http/metrics.ts';

export function installProcessGuards(log: FastifyBaseLogger, metrics?: Metrics): () => void {
  const onException = (err: Error) => {
    metrics?.uncaughtErrors.inc({ kind: 'exception' });
    log.fatal({ err }, 'uncaught exception (the server keeps serving; this is a defect, please report it)');
  };
  const onRejection = (reason: unknown) => {
    metrics?.uncaughtErrors.inc({ kind: 'rejection' });
    log.error(
      { err: reason },
      'unhandled promise rejection (the server keeps serving; this is a defect, please report it)',
    );
  };
  process.on('uncaughtException', onException);
  process.on('unhandledRejection', onRejection);
  return () => {
    process.off('uncaughtException', onException);
    process.off('unhandledRejection', onRejection);
  };
}
