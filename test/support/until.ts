/** A failed `expect` (Jest's assertion errors carry their matcher's result). */
function isAssertion(err: unknown): boolean {
  return typeof err === 'object' && err !== null && 'matcherResult' in err;
}

/**
 * The tests' one polling helper: resolve with `probe()`'s value once it is truthy, polling every
 * `everyMs`. A probe that throws counts as "not yet" (a server still starting, a node failing over),
 * except a failed `expect` inside it, which fails at once: that is a check made at every look. The
 * last value or error is in the message. Fails, naming `what`, after `timeoutMs`: a bound against
 * hangs, never a timing assertion. The default stays under Jest's 30 s test timeout so that a wait
 * that never ends says what it waited for; tests with a longer timeout pass a longer bound.
 */
export async function until<T>(what: string, probe: () => T | Promise<T>, timeoutMs = 20_000, everyMs = 10): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value as NonNullable<T>;
      last = value;
    } catch (err) {
      if (isAssertion(err)) throw err;
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`,
      );
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
