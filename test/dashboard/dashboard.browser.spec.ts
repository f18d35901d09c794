import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type CanActivate, Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import type { Browser, Page } from 'playwright-core';
import { postgresBackend, Rheo, RheoConsumer, RheoDashboardModule, type RheoDashboardOptions, RheoModule, RheoReject } from '../../lib';
import { until } from '../support/until';
import { dropSchema, freshSchema, PG_URL } from '../sql/pg-helpers';
import { type Adapter, type DashboardApp, serveDashboard } from './apps';
import { launchChromium } from './browser';
import { colourStats, decodePng } from './png';

// The dashboard in real headless Chromium (Debian's package, playwright-core) on
// PostgreSQL: what an operator sees and clicks, on Express and on Fastify.

jest.setTimeout(90_000);

const schema = freshSchema('dashboard');
const STREAM = 'orders';
const ARTIFACTS = join(__dirname, '..', '..', 'test-artifacts');
/** The screenshot of docs/operations.md, rewritten when RHEO_WRITE_SCREENSHOT=1. */
const README_SCREENSHOT = join(__dirname, '..', '..', 'docs', 'images', 'dashboard.png');

// Order 7 is poison until `fixed`: rejected (a dead letter), then accepted once redriven.
let fixed = false;
const handled: number[] = [];

@Controller()
class Billing {
  @RheoConsumer({ stream: STREAM, group: 'billing', pollMs: 20 })
  onOrder(@Payload() order: { n: number }) {
    handled.push(order.n);
    if (order.n === 7 && !fixed) throw new RheoReject('order 7: amount is negative');
  }
}

let browser: Browser;
const opened: DashboardApp[] = [];

function backend() {
  return postgresBackend({ url: PG_URL, schema, poolSize: 3 });
}

async function serve(adapter: Adapter, dashboard: RheoDashboardOptions, withConsumers = false): Promise<DashboardApp> {
  const served = await serveDashboard(
    adapter,
    {
      imports: [
        RheoModule.forRoot({ backend: backend(), streams: [{ name: STREAM, partitions: 2 }] }),
        RheoDashboardModule.forRoot(dashboard),
      ],
      controllers: withConsumers ? [Billing] : [],
    },
    { consumers: withConsumers },
  );
  opened.push(served);
  return served;
}

/** A dead letter in `group`, which no consumer runs: one event fetched and rejected. */
async function deadLetterIn(rheo: Rheo, group: string, reason: string): Promise<string> {
  await rheo.createGroup(STREAM, group, { ifNotExists: true, start: 'end' });
  await rheo.append(STREAM, { key: `${group}-1`, type: 'order', payload: { n: 100 } });
  const [lease] = await rheo.fetch(STREAM, group, { limit: 1 });
  await rheo.reject(lease, { reason });
  return lease.event.id;
}

const groupRow = (page: Page, group: string) => page.locator(`[data-testid=group-row][data-group="${group}"]`);
const cell = (page: Page, group: string, what: string) => groupRow(page, group).locator(`[data-testid=${what}]`);
const textOf = async (page: Page, selector: string) => (await page.locator(selector).allTextContents()).join('|');

beforeAll(async () => {
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  for (const s of opened) await s.app.close();
  await dropSchema(schema);
});

describe('with actions enabled, on Express', () => {
  let s: DashboardApp;
  let page: Page;

  beforeAll(async () => {
    s = await serve('express', { readOnly: false }, true);
    const rheo = s.app.get(Rheo);
    await rheo.createGroup(STREAM, 'billing');
    await rheo.createGroup(STREAM, 'shipping'); // no consumer: it stays behind
    for (let n = 0; n < 20; n++)
      await rheo.append(STREAM, { key: `customer-${n % 6}`, type: 'order', payload: { n, amount: n === 7 ? -5 : 10 * n } });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  });

  afterAll(() => page?.close());

  it("shows a group's lag falling to 0 while its consumer runs", async () => {
    await page.goto(`${s.url}/rheo`);
    await until('lag 20 shown', async () => (await cell(page, 'billing', 'lag').textContent()) === '20', 20_000);
    expect(await textOf(page, '[data-testid=stream-row] [data-testid=high-watermark]')).toBe('20');
    expect(await textOf(page, '[data-testid=mode]')).toBe('actions enabled');

    await s.app.startAllMicroservices();
    await until('lag 0 shown', async () => (await cell(page, 'billing', 'lag').textContent()) === '0', 20_000);
    await until('the dead letter counted', async () => (await cell(page, 'billing', 'dead-letters').textContent()) === '1', 20_000);
    expect(await cell(page, 'billing', 'consumer').textContent()).toBe('running');
    expect(await cell(page, 'shipping', 'lag').textContent()).toBe('20');
    expect(await cell(page, 'shipping', 'consumer').textContent()).toBe('–');
    // The chart drew the lag it saw.
    expect(await groupRow(page, 'billing').locator('[data-testid=lag-sparkline] polyline').count()).toBe(1);
  });

  it('shows the dead letter: event id, reason, attempt', async () => {
    await groupRow(page, 'billing').locator('[data-testid=open-group]').click();
    const row = page.locator('[data-testid=dead-letter-row]');
    await row.first().waitFor();
    expect(await row.count()).toBe(1);
    const dead = (await s.app.get(Rheo).deadLetters(STREAM, 'billing'))[0];
    expect(await row.getAttribute('data-event-id')).toBe(dead.eventId);
    expect(await row.locator('[data-testid=event-id]').textContent()).toBe(dead.eventId);
    expect(await row.locator('[data-testid=reason]').textContent()).toBe('order 7: amount is negative');
    expect(await row.locator('[data-testid=attempt]').textContent()).toBe('1');
    // showPayloads is off: no payload column.
    expect(await page.locator('[data-testid=payload]').count()).toBe(0);
    await page.locator('[data-testid=lag-chart] polyline').waitFor();
  });

  it('saves a screenshot of the overview that is not blank', async () => {
    const png = await page.screenshot({ fullPage: true });
    mkdirSync(ARTIFACTS, { recursive: true });
    writeFileSync(join(ARTIFACTS, 'dashboard-overview.png'), png);
    if (process.env.RHEO_WRITE_SCREENSHOT === '1') {
      mkdirSync(join(README_SCREENSHOT, '..'), { recursive: true });
      writeFileSync(README_SCREENSHOT, png);
    }
    const image = decodePng(png);
    expect(image.width).toBe(1280);
    const stats = colourStats(image);
    // Text, tables, badges and a chart: many colours, and much of the page not background.
    expect(stats.distinct).toBeGreaterThan(50);
    expect(stats.nonBackground).toBeGreaterThan(0.1);
  });

  it('redrives the dead letter with a click, and it leaves', async () => {
    fixed = true;
    await page.locator('[data-testid=dead-letter-row] [data-testid=redrive-one]').click();
    await page.locator('[data-testid=no-dead-letters]').waitFor({ timeout: 20_000 });
    expect(await textOf(page, '[data-testid=notice]')).toBe('Redrove 1 dead letter(s)');
    await until('no dead letters counted', async () => (await cell(page, 'billing', 'dead-letters').textContent()) === '0', 20_000);
    await until('lag 0 again', async () => (await cell(page, 'billing', 'lag').textContent()) === '0', 20_000);
    expect(await s.app.get(Rheo).deadLetters(STREAM, 'billing')).toEqual([]);
    expect(handled.filter((n) => n === 7)).toEqual([7, 7]);
  });
});

describe('read-only (the default), on Express', () => {
  let s: DashboardApp;
  let deadId: string;

  beforeAll(async () => {
    s = await serve('express', {});
    deadId = await deadLetterIn(s.app.get(Rheo), 'audit', 'audit store refused it');
  });

  it('shows the dead letter without any action, and refuses the action POST with 403', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${s.url}/rheo`);
      await groupRow(page, 'audit').locator('[data-testid=open-group]').click();
      await page.locator(`[data-testid=dead-letter-row][data-event-id="${deadId}"]`).waitFor();
      expect(await textOf(page, '[data-testid=mode]')).toBe('read-only');
      expect(await page.locator('[data-testid=redrive-one]').count()).toBe(0);
      expect(await page.locator('[data-testid=actions]').count()).toBe(0);
      // The POST the button would send, from the page itself (same origin, the header set).
      const status = await page.evaluate(async (id) => {
        const res = await fetch('/rheo/api/streams/orders/groups/audit/redrive', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-rheo-dashboard': '1' },
          body: JSON.stringify({ eventIds: [id] }),
        });
        return res.status;
      }, deadId);
      expect(status).toBe(403);
      expect((await s.app.get(Rheo).deadLetters(STREAM, 'audit')).map((d) => d.eventId)).toEqual([deadId]);
    } finally {
      await page.close();
    }
  });
});

describe('behind a guard that refuses', () => {
  const refuse: CanActivate = { canActivate: () => false };
  let s: DashboardApp;

  beforeAll(async () => {
    s = await serve('express', { guard: refuse, readOnly: false });
  });

  it('answers 403 for the page and the API', async () => {
    const page = await browser.newPage();
    try {
      expect((await page.goto(`${s.url}/rheo`))?.status()).toBe(403);
      expect(await page.locator('[data-testid=groups]').count()).toBe(0);
      expect((await page.goto(`${s.url}/rheo/api/overview`))?.status()).toBe(403);
      expect((await page.goto(`${s.url}/rheo/assets/dashboard.js`))?.status()).toBe(403);
    } finally {
      await page.close();
    }
  });
});

describe('the same page served by Fastify', () => {
  let s: DashboardApp;
  let deadId: string;

  beforeAll(async () => {
    s = await serve('fastify', { path: '/ops/rheo', readOnly: false, showPayloads: true });
    deadId = await deadLetterIn(s.app.get(Rheo), 'archive', 'archive is full');
  });

  it('shows groups and a dead letter with its payload, and redrives it', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${s.url}/ops/rheo`);
      await groupRow(page, 'archive').waitFor();
      expect(await cell(page, 'archive', 'dead-letters').textContent()).toBe('1');
      await groupRow(page, 'archive').locator('[data-testid=open-group]').click();
      const row = page.locator(`[data-testid=dead-letter-row][data-event-id="${deadId}"]`);
      await row.waitFor();
      expect(await row.locator('[data-testid=reason]').textContent()).toBe('archive is full');
      expect(await row.locator('[data-testid=payload]').textContent()).toBe('{"n":100}');
      await row.locator('[data-testid=redrive-one]').click();
      await page.locator('[data-testid=no-dead-letters]').waitFor({ timeout: 20_000 });
      // Redriven, not consumed (no consumer here): deliverable again, so it counts as lag.
      await until('lag 1 shown', async () => (await cell(page, 'archive', 'lag').textContent()) === '1', 20_000);
      expect(await s.app.get(Rheo).deadLetters(STREAM, 'archive')).toEqual([]);
    } finally {
      await page.close();
    }
  });
});
