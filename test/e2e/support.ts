import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INestApplication, INestMicroservice, ModuleMetadata } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { memoryBackend, Rheo, RheoError, RheoModule, RheoServer, type RheoModuleOptions } from '../../lib';
import { createApp } from '../../sample/bootstrap';

/** A hybrid app (HTTP + the Rheo transport) wired the way main.ts does it. */
export async function startHybrid(module: ModuleMetadata): Promise<INestApplication> {
  const ref = await Test.createTestingModule(module).compile();
  const app = ref.createNestApplication({ logger: false });
  app.connectMicroservice({ strategy: app.get(RheoServer) }, { inheritAppConfig: true });
  await app.init();
  await app.startAllMicroservices();
  return app;
}

/** A standalone microservice on the default instance's server, not yet listening. */
export async function createMicroservice(module: ModuleMetadata): Promise<INestMicroservice> {
  const ref = await Test.createTestingModule(module).compile();
  return ref.createNestMicroservice({ strategy: ref.get(RheoServer), logger: false });
}

/**
 * The sample app (sample/bootstrap.ts) on a SQLite file of its own (RHEO_SAMPLE_DB),
 * started before the enclosing describe's tests and closed, its file removed, after
 * them. Call inside a describe; returns the running app.
 */
export function sampleApp(label: string): () => INestApplication {
  const dir = mkdtempSync(join(tmpdir(), `rheo-${label}-`));
  let app: INestApplication | undefined;
  beforeAll(async () => {
    process.env.RHEO_SAMPLE_DB = join(dir, 'rheo.db');
    app = await createApp(false);
    await app.startAllMicroservices();
  });
  afterAll(async () => {
    await app?.close();
    delete process.env.RHEO_SAMPLE_DB;
    rmSync(dir, { recursive: true, force: true });
  });
  return () => app!;
}

/**
 * Start a microservice on a memory backend declaring `stream`, with `controller`
 * and the module `options`; return the error its startup failed with, after
 * checking that the failed startup created no group.
 */
export async function startupError(
  stream: string,
  controller: unknown,
  options: Omit<RheoModuleOptions, 'backend' | 'streams'> = {},
): Promise<RheoError> {
  const backend = memoryBackend();
  const app = await createMicroservice({
    imports: [RheoModule.forRoot({ backend, streams: [{ name: stream }], ...options })],
    controllers: [controller as never],
  });
  let error: unknown;
  try {
    await app.listen();
  } catch (err) {
    error = err;
  }
  expect(await new Rheo(backend).listGroups(stream)).toEqual([]);
  await app.close();
  expect(error).toBeInstanceOf(RheoError);
  return error as RheoError;
}

/** `name{labels} value` lines of a Prometheus text exposition, by `name{labels}`. */
export function parseExposition(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}
