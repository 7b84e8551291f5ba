// Entry of a worker thread (content processing, the jst sandbox). Worker threads do not inherit the loader that
// lets the main thread run TypeScript, so register tsx here, then load the worker itself.
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
await import(workerData.entry);
