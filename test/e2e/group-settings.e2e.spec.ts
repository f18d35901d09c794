import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Controller, type INestApplication } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { type JsonValue, Rheo, RheoConsumer, RheoError, RheoModule, RheoServer, sqliteBackend } from '../../lib';
import { CapturingLogger } from './log-capture';
import { startupError } from './support';

@Controller()
class Billing {
  @RheoConsumer({ stream: 'orders', group: 'billing', maxAttempts: 10, retry: { initialMs: 5, factor: 1, maxMs: 5 }, ordering: 'none' })
  bill(@Payload() order: JsonValue): void {
    void order;
  }
}

// The group exists with other settings than Billing declares; groupSettings says what startup does about it.
describe("RheoModule groupSettings: 'create' (the default) or 'apply'", () => {
  let dir: string;
  let file: string;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rheo-group-settings-'));
    file = join(dir, 'rheo.db');
    const rheo = new Rheo(sqliteBackend({ database: file }));
    await rheo.createStream('orders');
    await rheo.createGroup('orders', 'billing', { maxAttempts: 5, ordering: 'partition' });
    await rheo.close();
  });

  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** Boot the app, return what it logged from RheoServer, then close it. */
  async function boot(groupSettings?: 'create' | 'apply'): Promise<{ warn: string[]; log: string[] }> {
    const logger = new CapturingLogger();
    const options = { backend: sqliteBackend({ database: file }), ...(groupSettings ? { groupSettings } : {}) };
    const ref = await Test.createTestingModule({ imports: [RheoModule.forRoot(options)], controllers: [Billing] }).compile();
    const app: INestApplication = ref.createNestApplication({ logger });
    app.connectMicroservice({ strategy: app.get(RheoServer) }, { inheritAppConfig: true });
    await app.init();
    await app.startAllMicroservices();
    await app.close();
    const mine = (level: 'warn' | 'log') => logger.lines(level).filter((l) => l.startsWith('[RheoServer]'));
    return { warn: mine('warn'), log: mine('log') };
  }

  async function stored() {
    const rheo = new Rheo(sqliteBackend({ database: file }));
    try {
      return (await rheo.groupInfo('orders', 'billing')).config;
    } finally {
      await rheo.close();
    }
  }

  it("'create' leaves the stored group as it is and its warning names the option that would apply the declared one", async () => {
    const { warn } = await boot();
    expect(warn).toEqual([
      '[RheoServer] Billing.bill: group orders/billing already exists with maxAttempts 5, retry.initialMs 1000, retry.factor 2, ' +
        "retry.maxMs 60000, ordering partition; these options apply only when a group is created (set groupSettings: 'apply' " +
        'on RheoModule.forRoot to bring the stored group in line at startup)',
    ]);
    expect(await stored()).toMatchObject({ maxAttempts: 5, retry: { initialMs: 1000, factor: 2, maxMs: 60_000 }, ordering: 'partition' });
  });

  it("'apply' changes the stored group to the declared settings, logging each change; ordering only warns", async () => {
    const { warn, log } = await boot('apply');
    expect(log.filter((l) => l.includes("(groupSettings: 'apply')"))).toEqual([
      "[RheoServer] Billing.bill: group orders/billing: maxAttempts 5 -> 10 (groupSettings: 'apply')",
      "[RheoServer] Billing.bill: group orders/billing: retry.initialMs 1000 -> 5 (groupSettings: 'apply')",
      "[RheoServer] Billing.bill: group orders/billing: retry.factor 2 -> 1 (groupSettings: 'apply')",
      "[RheoServer] Billing.bill: group orders/billing: retry.maxMs 60000 -> 5 (groupSettings: 'apply')",
    ]);
    expect(warn).toEqual([
      '[RheoServer] Billing.bill: group orders/billing already exists with ordering partition; ordering cannot change in place ' +
        '(deliveries in flight would break it): reset or recreate the group to change it',
    ]);
    expect(log.find((l) => l.includes('consumer started'))).toContain('maxAttempts 10, retry 5 ms x1 up to 5 ms, ordering partition');
    expect(await stored()).toMatchObject({ maxAttempts: 10, retry: { initialMs: 5, factor: 1, maxMs: 5 }, ordering: 'partition' });
    // In line now: a second boot changes nothing and logs no change.
    const again = await boot('apply');
    expect(again.log.filter((l) => l.includes('groupSettings'))).toEqual([]);
  });

  it('refuses a groupSettings that is neither, naming the field', async () => {
    const err = await startupError('orders', Billing, { groupSettings: 'always' as never }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RheoError);
    expect((err as RheoError).field).toBe('groupSettings');
    expect((err as RheoError).message).toMatch(/must be 'create' or 'apply'/);
  });
});
