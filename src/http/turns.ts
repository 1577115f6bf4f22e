/**
 * Work that takes a pass over a large part of the store (a new selection,
 * its ETag, a change set), done one piece per turn of the event loop, in
 * order of arrival: the requests that arrived meanwhile, small answers
 * among them, are read and answered between two pieces, so no request
 * waits behind more than one other's pass (docs/operations.md, Memory, hostile
 * clients and secrets).
 */
export class Turns {
  /** In order of arrival: a Set keeps it, and drops a piece whose client left in O(1). */
  private readonly queue = new Set<() => void>();
  private scheduled = false;
  /** Pieces run so far. */
  ran = 0;

  get waiting(): number {
    return this.queue.size;
  }

  /** Runs `piece` in a turn of its own; the function returned takes it back if it has not run. */
  enqueue(piece: () => void): () => void {
    this.queue.add(piece);
    this.schedule();
    return () => {
      this.queue.delete(piece);
    };
  }

  private schedule(): void {
    if (this.scheduled || this.queue.size === 0) return;
    this.scheduled = true;
    // setImmediate runs after the poll phase: the sockets' new requests are read first.
    setImmediate(() => this.turn());
  }

  private turn(): void {
    this.scheduled = false;
    const next = this.queue.values().next();
    if (!next.done) {
      this.queue.delete(next.value);
      this.ran++;
      next.value();
    }
    this.schedule();
  }
}
