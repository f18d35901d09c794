import type { Browser, Page } from 'playwright-core';
import { type Lease, memoryBackend, Rheo, RheoDashboardModule, RheoModule } from '../../lib';
import { call, type DashboardApp, serveDashboard } from './apps';
import { launchChromium, openGroup } from './browser';

// A group's flow limits on the dashboard: the JSON API carries them and what
// waits for its key, and the group view, in real headless Chromium, shows them in
// one line (hidden for a group without any), refreshed as the store changes.

jest.setTimeout(90_000);

const STREAM = 'orders';

let browser: Browser;
let s: DashboardApp;
let page: Page;
let leases: Lease[];

beforeAll(async () => {
  s = await serveDashboard('express', {
    imports: [
      RheoModule.forRoot({ backend: memoryBackend(), streams: [{ name: STREAM, partitions: 1 }] }),
      RheoDashboardModule.forRoot({ readOnly: true }),
    ],
  });
  const rheo = s.app.get(Rheo);
  await rheo.createGroup(STREAM, 'keyed', { ordering: 'key', groupConcurrency: 10, rateLimit: { max: 100, perMs: 1000 } });
  await rheo.createGroup(STREAM, 'plain');
  await rheo.appendBatch(
    STREAM,
    ['a', 'a', 'a', 'b'].map((key) => ({ key, payload: { key } })),
  );
  // a's head and b's are leased; a's two later events wait for their key.
  leases = await rheo.fetch(STREAM, 'keyed', { limit: 10 });
  expect(leases.map((l) => l.event.key)).toEqual(['a', 'b']);
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
});

afterAll(async () => {
  await page?.close();
  await browser?.close();
  await s?.app.close();
});

it('the API carries the limits and the events waiting for their key', async () => {
  const res = await call(s.url, `/rheo/api/streams/${STREAM}/groups/keyed`);
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({
    ordering: 'key',
    keyConcurrency: null,
    groupConcurrency: 10,
    rateLimit: { max: 100, perMs: 1000 },
    waitingForKey: 2,
  });
  const plain = await call(s.url, `/rheo/api/streams/${STREAM}/groups/plain`);
  expect(plain.body).toMatchObject({ keyConcurrency: null, groupConcurrency: null, rateLimit: null, waitingForKey: 0 });
});

it('the group view shows the limits and what waits, and updates as a key frees', async () => {
  await openGroup(page, s.url, 'keyed');
  const flow = page.locator('[data-testid=flow-state]');
  await flow.waitFor();
  expect(await flow.textContent()).toBe('Flow limits: group concurrency 10 · rate limit 100 per 1000 ms · 2 waiting for their key');
  expect(await page.locator('[data-testid=group-figures]').textContent()).toContain('ordering key');
  // The ack of a's head gives its place to a's next event, and the rate limit goes: seen at the next refresh.
  const rheo = s.app.get(Rheo);
  await rheo.ack(leases[0]);
  await rheo.updateGroup(STREAM, 'keyed', { rateLimit: null });
  await page.locator('[data-testid=flow-state]', { hasText: 'Flow limits: group concurrency 10 · 1 waiting for their key' }).waitFor();
});

it('a group without limits shows no flow line', async () => {
  await openGroup(page, s.url, 'plain');
  expect(await page.locator('[data-testid=flow-state]').isHidden()).toBe(true);
});
