import { spawn } from 'node:child_process';
import { join } from 'node:path';

interface Run {
  lines: string[];
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Start the fixture app, send SIGTERM once its handler is running, collect its output until it exits. */
function runAndTerminate(env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', join(__dirname, 'fixtures', 'sigterm-app.ts')], {
      cwd: join(__dirname, '..', '..'),
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: string[] = [];
    let buffer = '';
    let stderr = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`fixture did not finish; output: ${lines.join(' | ')} stderr: ${stderr}`));
    }, 60_000);
    child.stderr.on('data', (d) => (stderr += String(d)));
    child.stdout.on('data', (d) => {
      buffer += String(d);
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        lines.push(line);
        if (line.startsWith('STARTED')) child.kill('SIGTERM');
      }
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (lines.some((l) => l.startsWith('FAILED'))) reject(new Error(`fixture failed: ${lines.join(' | ')} ${stderr}`));
      else resolve({ lines, code, signal });
    });
  });
}

function state(run: Run): { lag: number; inflight: number; deadLetters: number; signal: string } {
  const line = run.lines.find((l) => l.startsWith('STATE '));
  if (!line) throw new Error(`no STATE line in: ${run.lines.join(' | ')}`);
  return JSON.parse(line.slice('STATE '.length));
}

describe('SIGTERM with enableShutdownHooks', () => {
  jest.setTimeout(90_000);

  it('waits for the inflight handler, acks its event, then exits', async () => {
    const run = await runAndTerminate({ HANDLER_MS: '1500', DRAIN_TIMEOUT_MS: '20000' });
    const id = run.lines.find((l) => l.startsWith('APPENDED '))!.split(' ')[1];
    const kinds = run.lines.map((l) => l.split(' ')[0]);
    expect(kinds.indexOf('STARTED')).toBeLessThan(kinds.indexOf('FINISHED'));
    expect(kinds.indexOf('FINISHED')).toBeLessThan(kinds.indexOf('STATE'));
    expect(run.lines).toContain(`FINISHED ${id}`);
    expect(state(run)).toEqual({ signal: 'SIGTERM', lag: 0, inflight: 0, deadLetters: 0 });
    expect(kinds).not.toContain('REDELIVERED');
    expect(run.signal === 'SIGTERM' || run.code === 0).toBe(true);
  });

  it('gives prefetched leases no handler started back at once, with the attempt they had', async () => {
    const run = await runAndTerminate({ HANDLER_MS: '1500', DRAIN_TIMEOUT_MS: '20000', BUFFERED: '9' });
    const id = run.lines.find((l) => l.startsWith('APPENDED '))!.split(' ')[1];
    const buffered: string[] = JSON.parse(run.lines.find((l) => l.startsWith('BUFFERED '))!.slice('BUFFERED '.length));
    expect(run.lines).toContain(`FINISHED ${id}`);
    // Nothing held after the drain: the running one acked, the nine waiting ones given back (not left to expire).
    expect(state(run)).toEqual({ signal: 'SIGTERM', lag: 9, inflight: 0, deadLetters: 0 });
    const released = JSON.parse(run.lines.find((l) => l.startsWith('RELEASED '))!.slice('RELEASED '.length));
    expect(released).toEqual(buffered.map((b) => ({ id: b, attempt: 1 })));
    expect(run.lines.filter((l) => l.startsWith('STARTED'))).toHaveLength(1);
  });

  it('when the drain times out, leaves the event unsettled so it is redelivered, never lost', async () => {
    const run = await runAndTerminate({ HANDLER_MS: '8000', DRAIN_TIMEOUT_MS: '200' });
    const id = run.lines.find((l) => l.startsWith('APPENDED '))!.split(' ')[1];
    expect(state(run)).toMatchObject({ signal: 'SIGTERM', lag: 1, deadLetters: 0 });
    const redelivered = JSON.parse(run.lines.find((l) => l.startsWith('REDELIVERED '))!.slice('REDELIVERED '.length));
    expect(redelivered).toEqual([{ id, attempt: 2 }]);
  });
});
