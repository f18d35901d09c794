// `npm run demo`: the sample end to end, in the terminal. Boots the app, appends
// a few hundred market events over HTTP, shows both groups catching up, shows a
// redelivery after a consumer on "another node" dies holding a lease, then prints
// the final lag, dead letters, /health, /metrics and the dashboard's overview, and
// exits 0 (1 if anything is off). `npm run demo -- --serve` then keeps the app up,
// so the dashboard it prints the URL of can be opened (Ctrl-C stops it).
import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { type Overview, Rheo } from '../lib';
import { createApp } from './bootstrap';
import { MARKET_EVENTS, type MarketEventInput } from './market';
import { StatsService } from './stats.service';

const EVENTS = 400;
const CRASHED_LEASE_MS = 1500;
const instruments = ['EURUSD', 'USDJPY', 'GBPUSD', 'UST10Y', 'BUND', 'SOFR3M'];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function marketEvent(i: number): MarketEventInput {
  const instrument = instruments[i % instruments.length];
  const price = i === 123 ? -1 : Math.round((50 + ((i * 37) % 100)) * 100) / 100; // event 123 is poison
  return { type: i % 5 === 0 ? 'curve_update' : 'trade', payload: { instrument, price, qty: 100 + ((i * 7919) % 9900) } };
}

async function main(): Promise<number> {
  const app = await createApp(['error']);
  await app.listen(0); // HTTP first, the consumers below: a taken port fails before any lease is claimed
  const base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
  const stats = app.get(StatsService);
  const rheo = app.get(Rheo);
  const post = async (path: string, body: unknown): Promise<{ id: string }> => {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as { id: string };
  };
  console.log(
    `nestjs-rheo demo: ${rheo.backend.name} backend, stream "${MARKET_EVENTS}" (4 partitions), groups risk + surveillance, ${base}`,
  );
  console.log(`dashboard: ${base}/rheo (its JSON API under ${base}/rheo/api/)`);

  // A surveillance worker on another node takes the first event and dies holding its lease.
  await rheo.createGroup(MARKET_EVENTS, 'surveillance', { ifNotExists: true });
  // The log is durable: a second run finds the first run's dead letters, so look at this run's only.
  const runStart = new Date();
  const first = await post('/events', marketEvent(0));
  const [crashed] = await rheo.fetch(MARKET_EVENTS, 'surveillance', {
    limit: 1,
    leaseMs: CRASHED_LEASE_MS,
    consumerId: 'node-b (crashed)',
  });
  console.log(
    `node-b leased event ${crashed.event.id} (attempt ${crashed.attempt}) for ${CRASHED_LEASE_MS} ms, then crashed without settling it`,
  );

  await app.startAllMicroservices();
  for (let i = 1; i < EVENTS; i += 100) {
    await post(
      '/events/batch',
      Array.from({ length: Math.min(100, EVENTS - i) }, (_, k) => marketEvent(i + k)),
    );
  }
  console.log(`appended ${EVENTS} events over HTTP; consuming:`);

  const started = Date.now();
  for (;;) {
    const lag = (await (await fetch(`${base}/events/lag`)).json()) as { risk: number; surveillance: number };
    console.log(
      `  +${String(Date.now() - started).padStart(5)} ms  lag risk=${String(lag.risk).padStart(3)}  surveillance=${String(lag.surveillance).padStart(3)}  handled risk=${stats.handled.risk} surveillance=${stats.handled.surveillance}`,
    );
    if (lag.risk === 0 && lag.surveillance === 0) break;
    if (Date.now() - started > 60_000) throw new Error('consumers did not catch up within 60 s');
    await sleep(250);
  }

  const redelivered = stats.redeliveries.find((r) => r.startsWith(`surveillance:${first.id}:`));
  console.log(
    redelivered
      ? `redelivery: event ${first.id} went back to group surveillance after node-b's lease expired (attempt ${redelivered.split(':')[2]})`
      : `redelivery: NOT observed for ${first.id}`,
  );
  const dead = (await rheo.deadLetters(MARKET_EVENTS, 'surveillance', { limit: 1000 })).filter((d) => d.deadLetteredAt >= runStart);
  for (const d of dead) console.log(`dead letter: surveillance ${d.eventId} after ${d.attempt} attempt(s): ${d.reason}`);
  console.log(
    `surveillance alerts: ${stats.alerts.length}; risk exposure: ${[...stats.exposure].map(([k, v]) => `${k}=${Math.round(v)}`).join(' ')}`,
  );
  const health = await fetch(`${base}/health`);
  console.log(`GET /health -> ${health.status} ${JSON.stringify(await health.json())}`);
  // What Prometheus would scrape: the delivery counters and the lag gauges.
  const metrics = await (await fetch(`${base}/metrics`)).text();
  const shown = metrics.split('\n').filter((line) => /^rheo_(deliveries_total|group_lag|appended_events_total)\{/.test(line));
  console.log(`GET /metrics (excerpt):\n  ${shown.join('\n  ')}`);

  // The dashboard's JSON API, as its page reads it every 2 s.
  const overview = await fetch(`${base}/rheo/api/overview`);
  const groups = ((await overview.json()) as Overview).streams.flatMap((st) => st.groups);
  console.log(
    `GET /rheo/api/overview -> ${overview.status} ${groups.map((g) => `${g.group}: lag ${g.lag}, dead letters ${g.deadLetters}, consumer ${g.consumer}`).join('; ')}`,
  );

  const ok = Boolean(redelivered) && dead.length === 1 && health.status === 200 && stats.handled.risk === EVENTS && overview.status === 200;
  console.log(ok ? 'demo finished: nothing lost' : 'demo finished with unexpected figures');
  if (process.argv.includes('--serve')) {
    console.log(`serving the dashboard at ${base}/rheo — Ctrl-C to stop`);
    // The app's shutdown hooks (bootstrap.ts) close it on Ctrl-C; the open server keeps the process alive until then.
    await new Promise<never>(() => {});
  }
  await app.close();
  return ok ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
