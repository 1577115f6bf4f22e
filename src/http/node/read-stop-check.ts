import { parentPort } from 'node:worker_threads';
import { runCheck } from './read-stop.js';

/** The node engine's check of stopping reads (read-stop.ts), on a thread of its own: it posts what it found, and ends. */
parentPort!.postMessage(await runCheck());
