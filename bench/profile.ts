// `npm run bench -- profile <memory|sqlite|postgres|redis> <append|consume> [--events N] [--interval µs] [--top N]`:
// a CPU profile of one operation of the throughput bench on one store (issue 15).
// This process prepares the store (for consume: N events appended, outside the
// profile), then runs bench/profile/child.ts in a new Node process with
// --cpu-prof, which writes bench-profiles/<store>-<op>-<time>.cpuprofile (open it
// in Chrome DevTools' Performance panel or speedscope.app). Then it prints the
// self time per function and per area over the measured window only, busiest
// first (the window, and the source maps that give TypeScript lines, are kept
// beside the profile as <name>.window.json). Only this process's CPU: the
// database's own work shows as `(idle)`.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import type { SourceMapPayload } from 'node:module';
import { join, resolve } from 'node:path';
import { benchAppend } from './harness';
import { summarize } from './profile/summary';
import { newLocation, openRheo, partitionsOf, PROFILED_STORES, type ProfiledStore, removeLocation } from './profile/stores';

const ROOT = resolve(__dirname, '..');
const OUT = join(ROOT, 'bench-profiles');
const USAGE = 'usage: npm run bench -- profile <memory|sqlite|postgres|redis> <append|consume> [--events N] [--interval µs] [--top N]';

function runChild(args: string[]): Promise<void> {
  return new Promise((ok, fail) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: 'inherit' });
    child.on('error', fail);
    child.on('exit', (code) => (code === 0 ? ok() : fail(new Error(`the profiled process exited with ${code}`))));
  });
}

export async function main(args: string[]): Promise<void> {
  const [store, op, ...rest] = args;
  if (!(PROFILED_STORES as readonly string[]).includes(store) || (op !== 'append' && op !== 'consume')) throw new Error(USAGE);
  let events = 20_000;
  let interval = 250;
  let top = 25;
  for (let i = 0; i < rest.length; i += 2) {
    const value = Number(rest[i + 1]);
    if (!Number.isInteger(value) || value <= 0) throw new Error(USAGE);
    if (rest[i] === '--events') events = value;
    else if (rest[i] === '--interval') interval = value;
    else if (rest[i] === '--top') top = value;
    else throw new Error(USAGE);
  }
  const s = store as ProfiledStore;
  const location = newLocation(s);
  const name = `${s}-${op}-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  const profile = join(OUT, `${name}.cpuprofile`);
  const windowFile = join(OUT, `${name}.window.json`);
  mkdirSync(OUT, { recursive: true });
  try {
    // The stream and group, and for consume the N waiting events, before the profiled process starts.
    if (s !== 'memory') {
      const rheo = openRheo(s, location);
      try {
        await rheo.createStream('bench', { partitions: partitionsOf(s) });
        await rheo.createGroup('bench', 'consumers');
        if (op === 'consume') await benchAppend(rheo, 'bench', events, 500);
      } finally {
        await rheo.close();
      }
    }
    await runChild([
      '--enable-source-maps',
      '--cpu-prof',
      `--cpu-prof-dir=${OUT}`,
      `--cpu-prof-name=${name}.cpuprofile`,
      `--cpu-prof-interval=${interval}`,
      '-r',
      'ts-node/register/transpile-only',
      join(__dirname, 'profile', 'child.ts'),
      s,
      op,
      location,
      String(events),
      windowFile,
    ]);
  } finally {
    await removeLocation(s, location);
  }
  const window = JSON.parse(readFileSync(windowFile, 'utf8')) as {
    startUs: number;
    endUs: number;
    eventsPerSec: number;
    sourceMaps: Record<string, SourceMapPayload>;
  };
  const sum = summarize(profile, window, ROOT, top);
  console.log(
    JSON.stringify({
      backend: s,
      op: 'profile',
      of: op,
      events,
      eventsPerSec: window.eventsPerSec,
      profile: profile.slice(ROOT.length + 1),
      windowMs: sum.windowMs,
      busyMs: sum.busyMs,
      idleMs: sum.idleMs,
      gcMs: sum.gcMs,
      samples: sum.samples,
    }),
  );
  const expected = Math.round((sum.windowMs * 1000) / interval);
  if (sum.samples < expected / 2) {
    console.log(
      `\nonly ${sum.samples} samples of ~${expected} expected in the window: the machine was too busy for the profiler; run again when it is quiet`,
    );
  }
  console.log(`\nself time by area (busy ${sum.busyMs} ms of ${sum.windowMs} ms; idle ${sum.idleMs} ms = waiting on the store)`);
  for (const a of sum.areas) console.log(`${a.ms.toFixed(1).padStart(9)} ms ${a.pct.toFixed(1).padStart(5)}%  ${a.name}`);
  console.log(`\ntop ${top} functions by self time`);
  for (const f of sum.functions) console.log(`${f.ms.toFixed(1).padStart(9)} ms ${f.pct.toFixed(1).padStart(5)}%  ${f.name}  ${f.where}`);
}
