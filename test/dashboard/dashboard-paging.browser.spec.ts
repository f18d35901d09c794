import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { Rheo, RheoDashboardModule, RheoModule, sqliteBackend } from '../../lib';
import { until } from '../support/until';
import { call, type DashboardApp, serveDashboard } from './apps';
import { launchChromium } from './browser';

// The overview of a store with many streams, on SQLite: the API answers pages
// (limit, after, total, next) and the page asks for pages, never for everything.

jest.setTimeout(90_000);

const STREAMS = 230;
const name = (i: number) => `s${String(i).padStart(3, '0')}`;

interface OverviewPage {
  at: string;
  total: number;
  offset: number;
  next: string | null;
  streams: Array<{ name: string; groups: Array<{ stream: string; group: string; lag: number }> }>;
}

const dir = mkdtempSync(join(tmpdir(), 'rheo-dashboard-paging-'));
let s: DashboardApp;

beforeAll(async () => {
  s = await serveDashboard('express', {
    imports: [RheoModule.forRoot({ backend: sqliteBackend({ database: join(dir, 'store.db') }) }), RheoDashboardModule.forRoot({})],
  });
  const rheo = s.app.get(Rheo);
  // Created out of name order: the pages come in name order all the same.
  for (let i = STREAMS - 1; i >= 0; i--) {
    await rheo.createStream(name(i));
    await rheo.createGroup(name(i), 'g');
    if (i % 2 === 0) await rheo.createGroup(name(i), 'h');
    await rheo.append(name(i), { payload: i });
  }
});

afterAll(async () => {
  await s?.app.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('GET <path>/api/overview', () => {
  it('answers a page of streams in name order, with the total and the cursor of the next page', async () => {
    const first = (await call(s.url, '/rheo/api/overview?limit=100')).body as OverviewPage;
    expect(first.total).toBe(STREAMS);
    expect(first.streams.map((x) => x.name)).toEqual(Array.from({ length: 100 }, (_, i) => name(i)));
    expect(first.next).toBe(name(99));
    expect(first.offset).toBe(0);
    // Each stream of the page comes with all its groups.
    expect(first.streams[0].groups.map((g) => [g.group, g.lag])).toEqual([
      ['g', 1],
      ['h', 1],
    ]);
    expect(first.streams[1].groups.map((g) => g.group)).toEqual(['g']);

    const seen = [...first.streams.map((x) => x.name)];
    let next = first.next;
    let pages = 1;
    while (next !== null) {
      const page = (await call(s.url, `/rheo/api/overview?limit=100&after=${encodeURIComponent(next)}`)).body as OverviewPage;
      expect(page.total).toBe(STREAMS);
      expect(page.offset).toBe(seen.length);
      seen.push(...page.streams.map((x) => x.name));
      next = page.next;
      pages++;
    }
    expect(pages).toBe(3);
    expect(seen).toEqual(Array.from({ length: STREAMS }, (_, i) => name(i)));
  });

  it('answers the default page size without a limit, and an empty last page after the last stream', async () => {
    const page = (await call(s.url, '/rheo/api/overview')).body as OverviewPage;
    expect(page.streams).toHaveLength(100);
    expect(page.next).toBe(name(99));
    const past = (await call(s.url, `/rheo/api/overview?after=${name(STREAMS - 1)}`)).body as OverviewPage;
    expect(past).toMatchObject({ total: STREAMS, next: null, streams: [] });
  });

  it.each([
    ['limit=0', 'limit'],
    ['limit=1001', 'limit'],
    ['limit=lots', 'limit'],
    ['limit=1&limit=2', 'limit'],
    ['after=a&after=b', 'after'],
    ['page=2', 'page'],
  ])('refuses ?%s with 400 naming the field', async (query, field) => {
    const res = await call(s.url, `/rheo/api/overview?${query}`);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'invalid_argument', field });
  });
});

describe('the page', () => {
  let browser: Browser;
  let page: Page;
  const asked: string[] = [];

  beforeAll(async () => {
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('request', (req) => {
      const url = new URL(req.url());
      if (url.pathname === '/rheo/api/overview') asked.push(url.search);
    });
  });

  afterAll(async () => {
    await page?.close();
    await browser?.close();
  });

  const streamNames = async () =>
    page.locator('[data-testid=stream-row]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-stream')));

  it('asks for pages and shows one, with the total, and moves between them', async () => {
    await page.goto(`${s.url}/rheo`);
    await until('the first page shown', async () => (await streamNames()).length === 50, 20_000);
    expect(await streamNames()).toEqual(Array.from({ length: 50 }, (_, i) => name(i)));
    expect(await page.locator('[data-testid=overview-range]').textContent()).toBe(`streams 1–50 of ${STREAMS}`);
    // Groups of the page's streams only.
    expect(await page.locator('[data-testid=group-row]').count()).toBe(75);

    // A group opened on the first page stays up to date on the next.
    await page.locator(`[data-testid=group-row][data-stream="${name(0)}"][data-group="g"] [data-testid=open-group]`).click();
    await until(
      'its figures shown',
      async () => (await page.locator('[data-testid=group-figures]').textContent())?.startsWith('lag 1 '),
      20_000,
    );

    await page.locator('[data-testid=overview-next]').click();
    await until('the second page shown', async () => (await streamNames())[0] === name(50), 20_000);
    expect(await streamNames()).toEqual(Array.from({ length: 50 }, (_, i) => name(50 + i)));
    expect(await page.locator('[data-testid=overview-range]').textContent()).toBe(`streams 51–100 of ${STREAMS}`);
    await s.app.get(Rheo).append(name(0), { payload: 'one more' });
    await until(
      'the opened group read off the page',
      async () => (await page.locator('[data-testid=group-figures]').textContent())?.startsWith('lag 2 '),
      20_000,
    );

    await page.locator('[data-testid=overview-previous]').click();
    await until('the first page again', async () => (await streamNames())[0] === name(0), 20_000);
    expect(await page.locator('[data-testid=overview-previous]').count()).toBe(0);

    // Every overview read the page made asked for one page: a limit, and a cursor past the first page.
    expect(asked.length).toBeGreaterThanOrEqual(3);
    for (const search of asked) expect(new URLSearchParams(search).get('limit')).toBe('50');
    expect(asked).toContain(`?limit=50&after=${name(49)}`);
  });
});
