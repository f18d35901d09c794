import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ts from 'typescript';

// The published surface, pinned (ADR 042): `nestjs-rheo` holds what a Nest user
// writes, `nestjs-rheo/backend` what only a backend author writes, and no name is
// in both. Adding, renaming or dropping a name fails here first, so a change to
// either entry is a decision made in this file and in ADR 042, never a side effect
// of a new file or a re-export.

const MAIN_VALUES = [
  'CHANNELS',
  'Consumer',
  'Group',
  'InjectRheo',
  'InjectRheoClient',
  'InjectRheoHealthIndicator',
  'InjectRheoServer',
  'ManualClock',
  'OnRheoEvent',
  'RHEO_ERROR_HTTP_STATUS',
  'Rheo',
  'RheoAdmin',
  'RheoBatchContext',
  'RheoClient',
  'RheoConsumer',
  'RheoContext',
  'RheoDashboardModule',
  'RheoError',
  'RheoHealthIndicator',
  'RheoHttpExceptionFilter',
  'RheoModule',
  'RheoReject',
  'RheoRetry',
  'RheoServer',
  'TRACED_OPERATIONS',
  'backendFromUrl',
  'getRheoClientToken',
  'getRheoHealthIndicatorToken',
  'getRheoServerToken',
  'getRheoToken',
  'isRheoError',
  'memoryBackend',
  'postgresBackend',
  'redisBackend',
  'rheoEntities',
  'rheoMigrations',
  'sqliteBackend',
  'storeClock',
  'typeormBackend',
];

const MAIN_TYPES = [
  'AppendInput',
  'AppendOptions',
  'Backend',
  'BackendFromUrlOptions',
  'BatchControl',
  'CancelDelayedOptions',
  'Clock',
  'ClockSkewMessage',
  'ConsumerBatchHandler',
  'ConsumerHandler',
  'ConsumerMessage',
  'DeadLetter',
  'DeadLetterMessage',
  'DeadLetterPage',
  'DeadLetterSummary',
  'DeleteGroupOptions',
  'DeliveryControl',
  'DeliveryMessage',
  'EventSummary',
  'FetchErrorMessage',
  'FetchOptions',
  'FlowHeldMessage',
  'FlowLimits',
  'FrontierMessage',
  'GroupBatchHandler',
  'GroupChanges',
  'GroupConfig',
  'GroupHandler',
  'GroupInfo',
  'GroupOptions',
  'GroupPause',
  'GroupPauseMessage',
  'GroupRunOptions',
  'GroupSkips',
  'GroupSummary',
  'HandlerErrorMessage',
  'JsonValue',
  'Lag',
  'Lease',
  'LeaseLostMessage',
  'LeaseMessage',
  'MemoryBackendOptions',
  'MetricsRegistry',
  'NackOptions',
  'OperationMessage',
  'Outcome',
  'Overview',
  'Page',
  'PauseGroupOptions',
  'PostgresBackendOptions',
  'ProcessMessage',
  'PurgeDeadLettersOptions',
  'Query',
  'RateLimit',
  'RedisBackendOptions',
  'RedriveOptions',
  'RejectOptions',
  'RenewErrorMessage',
  'ReplayOptions',
  'RescheduleOptions',
  'ResetOptions',
  'RheoAdminOptions',
  'RheoConsumerOptions',
  'RheoDashboardOptions',
  'RheoEntitiesOptions',
  'RheoErrorCode',
  'RheoEvent',
  'RheoEventMap',
  'RheoHealthOptions',
  'RheoHttpErrorBody',
  'RheoMetricsOptions',
  'RheoMigrationsOptions',
  'RheoModuleAsyncOptions',
  'RheoModuleOptions',
  'RheoOptions',
  'RheoRetryOptions',
  'SettleMessage',
  'SettleRequest',
  'SkipOptions',
  'SqliteBackendOptions',
  'StoreClockOptions',
  'StreamInfo',
  'StreamSummary',
  'TrimOptions',
  'TrimResult',
  'TypeormBackendOptions',
];

const BACKEND_VALUES = [
  'PARKING_ROUNDS',
  'RHEO_ERROR_CODES',
  'Registrations',
  'StoreClock',
  'appended',
  'backoffDelay',
  'claimPastDelays',
  'createCapabilities',
  'fetched',
  'runConformance',
  'systemClock',
  'toRheoError',
];

const BACKEND_TYPES = [
  'AppendedEvents',
  'BackendDescription',
  'Capabilities',
  'CapabilitiesInput',
  'ClaimDeadLetter',
  'ClaimRound',
  'ConformanceTarget',
  'CreateGroupRequest',
  'EventMetadata',
  'FetchRequest',
  'FetchedLeases',
  'FlowHeld',
  'Guarantees',
  'Mechanisms',
  'NewEvent',
  'Ordering',
  'PartitionLag',
  'QueryRequest',
  'QueryWhere',
  'ReadRequest',
  'RenewResult',
  'ReplayRequest',
  'ResolvedStart',
  'Retention',
  'RetryBackoff',
  'RheoErrorOptions',
  'SettleOp',
  'SettleResult',
  'SettleWritten',
  'StartPosition',
  'StoreTimeReader',
  'TransactionalAck',
  'TrimRequest',
  'WaitRequest',
];

const ROOT = join(__dirname, '..', '..');
const ENTRIES = { main: join(ROOT, 'lib', 'index.ts'), backend: join(ROOT, 'lib', 'backend.ts') };

/** Every name an entry exports as the compiler sees it, split into values and type-only names. */
function compiledExports(): Record<keyof typeof ENTRIES, { values: string[]; types: string[] }> {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(ROOT, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  );
  if (!config) throw new Error('tsconfig.json did not parse');
  const program = ts.createProgram(Object.values(ENTRIES), { ...config.options, noEmit: true });
  const checker = program.getTypeChecker();
  // Whether some link of the re-export chain is `export type` / `import type`.
  const exportedAsType = (symbol: ts.Symbol): boolean => {
    for (
      let link: ts.Symbol | undefined = symbol;
      link && link.flags & ts.SymbolFlags.Alias;
      link = checker.getImmediateAliasedSymbol(link)
    ) {
      if (link.declarations?.some((d) => ts.isTypeOnlyImportOrExportDeclaration(d))) return true;
    }
    return false;
  };
  const of = (file: string) => {
    const source = program.getSourceFile(file);
    const module = source && checker.getSymbolAtLocation(source);
    if (!module) throw new Error(`${file} is not a module`);
    const values: string[] = [];
    const types: string[] = [];
    for (const symbol of checker.getExportsOfModule(module)) {
      const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      // `export type { X }` of a class is type-only: it has no value at run time.
      const typeOnly = !(target.flags & ts.SymbolFlags.Value) || exportedAsType(symbol);
      (typeOnly ? types : values).push(symbol.name);
    }
    return { values: values.sort(), types: types.sort() };
  };
  return { main: of(ENTRIES.main), backend: of(ENTRIES.backend) };
}

const sorted = (names: readonly string[]) => [...names].sort();
// What a CommonJS consumer's `require` returns: the names that exist at run time.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const runtimeNames = (entry: string) => sorted(Object.keys(require(entry) as object));

describe('the exported names of nestjs-rheo and nestjs-rheo/backend', () => {
  // One program for both entries: it type-checks lib once, which is the slow part.
  let compiled: ReturnType<typeof compiledExports>;
  beforeAll(() => {
    compiled = compiledExports();
  }, 120_000);

  it('nestjs-rheo: the values at run time are the pinned list', () => {
    expect(runtimeNames('../../lib')).toEqual(sorted(MAIN_VALUES));
  });

  it('nestjs-rheo/backend: the values at run time are the pinned list', () => {
    expect(runtimeNames('../../lib/backend')).toEqual(sorted(BACKEND_VALUES));
  });

  it('nestjs-rheo: the compiler sees the pinned values and the pinned type-only names', () => {
    expect(compiled.main).toEqual({ values: sorted(MAIN_VALUES), types: sorted(MAIN_TYPES) });
  });

  it('nestjs-rheo/backend: the compiler sees the pinned values and the pinned type-only names', () => {
    expect(compiled.backend).toEqual({ values: sorted(BACKEND_VALUES), types: sorted(BACKEND_TYPES) });
  });

  it('each entry exports by name: no `export *`, so a new file adds nothing to the surface', () => {
    for (const file of Object.values(ENTRIES)) expect(readFileSync(file, 'utf8')).not.toMatch(/^export (type )?\*/m);
  });

  it('no name is in both entries: each has one home', () => {
    const main = new Set([...MAIN_VALUES, ...MAIN_TYPES]);
    expect([...BACKEND_VALUES, ...BACKEND_TYPES].filter((name) => main.has(name))).toEqual([]);
  });

  it('the pinned lists hold each name once', () => {
    for (const list of [
      [...MAIN_VALUES, ...MAIN_TYPES],
      [...BACKEND_VALUES, ...BACKEND_TYPES],
    ]) {
      expect(new Set(list).size).toBe(list.length);
    }
  });

  it('package.json publishes these two entries, built, and no other', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, unknown> };
    expect(pkg.exports).toEqual({
      '.': { types: './dist/index.d.ts', default: './dist/index.js' },
      './backend': { types: './dist/backend.d.ts', default: './dist/backend.js' },
      './package.json': './package.json',
    });
  });
});
