// `npm run bench -- many-groups [--groups N]`: what one Prometheus scrape and one
// dashboard overview read cost on a store with many groups (N streams of one
// group and one event each, default 10000), on SQLite in a temp file. The app
// declares one of those streams; the scrape is measured with the metrics option's
// default (the app's groups) and with `groups: 'all'`, the overview as the page
// asks for it (`GET <path>/api/overview?limit=50`, its first page).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Module } from '@nestjs/common';
import { Registry } from 'prom-client';
import { Rheo, RheoDashboardModule, RheoModule, sqliteBackend } from '../lib';

const ROUNDS = 3;

function option(args: string[], name: string, fallback: number): number {
  const at = args.indexOf(name);
  if (at === -1) return fallback;
  const n = Number(args[at + 1]);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} takes a positive integer`);
  return n;
}

const name = (i: number) => `s${String(i).padStart(6, '0')}`;

async function seed(file: string, streams: number): Promise<void> {
  const rheo = new Rheo(sqliteBackend({ database: file }));
  const t0 = performance.now();
  for (let i = 0; i < streams; i++) {
    await rheo.createStream(name(i));
    await rheo.createGroup(name(i), 'g');
    await rheo.append(name(i), { payload: { i } });
  }
  await rheo.close();
  console.log(`seeded ${streams} streams × 1 group in ${Math.round(performance.now() - t0)} ms`);
}

async function boot(file: string, metrics: Record<string, unknown>): Promise<{ app: INestApplication; url: string; registry: Registry }> {
  const registry = new Registry();
  @Module({
    imports: [
      RheoModule.forRoot({ backend: sqliteBackend({ database: file }), streams: [{ name: name(0) }], metrics: { registry, ...metrics } }),
      RheoDashboardModule.forRoot({ path: '/rheo' }),
    ],
  })
  class BenchApp {}
  const app = await NestFactory.create(BenchApp, { logger: false, abortOnError: false });
  await app.listen(0, '127.0.0.1');
  return { app, url: (await app.getUrl()).replace('[::1]', '127.0.0.1'), registry };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Median of ROUNDS reads, each past the scrape cache's second; the size of the last answer. */
async function measure(read: () => Promise<string>): Promise<{ ms: number; bytes: number; lines: number }> {
  const times: number[] = [];
  let text = '';
  for (let r = 0; r < ROUNDS; r++) {
    await sleep(1100);
    const t0 = performance.now();
    text = await read();
    times.push(performance.now() - t0);
  }
  return {
    ms: Math.round(median(times)),
    bytes: Buffer.byteLength(text),
    lines: text.split('\n').filter((l) => l && !l.startsWith('#')).length,
  };
}

async function scrape(file: string, what: string, metrics: Record<string, unknown>): Promise<void> {
  let booted;
  try {
    booted = await boot(file, metrics);
  } catch (err) {
    console.log(`scrape (${what}): not available (${(err as Error).message})`);
    return;
  }
  try {
    const m = await measure(() => booted.registry.metrics());
    console.log(`scrape (${what}): ${m.ms} ms, ${(m.bytes / 1e6).toFixed(2)} MB, ${m.lines} series`);
  } finally {
    await booted.app.close();
  }
}

export async function main(args: string[] = process.argv.slice(3)): Promise<void> {
  const streams = option(args, '--groups', 10_000);
  const dir = mkdtempSync(join(tmpdir(), 'rheo-many-groups-'));
  const file = join(dir, 'store.db');
  try {
    await seed(file, streams);
    await scrape(file, 'default', {});
    await scrape(file, "groups: 'all'", { groups: 'all' });
    const { app, url } = await boot(file, {});
    try {
      const m = await measure(async () => {
        const res = await fetch(`${url}/rheo/api/overview?limit=50`);
        if (!res.ok) throw new Error(`overview answered ${res.status}`);
        return res.text();
      });
      console.log(`overview (GET /rheo/api/overview?limit=50, the page's read): ${m.ms} ms, ${(m.bytes / 1e6).toFixed(2)} MB`);
    } finally {
      await app.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
