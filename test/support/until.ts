/**
 * Resolve once `probe()` holds, polling every `everyMs`; fail, naming `what`,
 * after `timeoutMs` (a bound against hangs, not a timing assertion).
 */
export async function until(what: string, probe: () => Promise<boolean> | boolean, timeoutMs = 60_000, everyMs = 20): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
