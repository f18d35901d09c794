import { performance } from 'node:perf_hooks';

/**
 * Paces a job cut into many short script calls (a trim, a purge) to about half of
 * the server's time: after each call it rests about as long as the call took
 * (round trip included), at least one event-loop turn. Redis runs one script at a
 * time, so a claim, settle or append arriving meanwhile waits at most for the call
 * under way, and with the rests it finds none under way half of the time: the job
 * takes twice as long, the hot path barely notices it. Rests shorter than a timer's
 * 1 ms are carried over and taken together.
 */
export class Pace {
  private owed = 0;
  private since = performance.now();

  async rest(): Promise<void> {
    this.owed += performance.now() - this.since;
    if (this.owed >= 1) {
      const ms = Math.floor(this.owed);
      this.owed -= ms;
      await new Promise((resolve) => setTimeout(resolve, ms));
    } else {
      await new Promise((resolve) => setImmediate(resolve));
    }
    this.since = performance.now();
  }
}
