import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * Full collections on demand: V8's --expose-gc, set once, at the start of the
 * server and of the build thread, never as a side effect of an import. The
 * memory of a dropped store lives outside the JavaScript heap and goes back
 * only when a full collection finds it unreachable (docs/design.md).
 */
let collect: (() => void) | null = null;

/** Lets this thread run full collections from now on. */
export function allowFullCollections(): void {
  if (collect) return;
  setFlagsFromString('--expose-gc');
  collect = runInNewContext('gc') as () => void;
}

/** A full collection of this thread's heap, if allowed at start; nothing otherwise. */
export function fullCollection(): void {
  collect?.();
}
