// Nest apps serving the dashboard, on Express or Fastify, listening on a free
// port of 127.0.0.1 so a browser (or fetch) can reach them.
import type { INestApplication, ModuleMetadata } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { RheoServer } from '../../lib';

export type Adapter = 'express' | 'fastify';

export interface DashboardApp {
  app: INestApplication;
  /** `http://127.0.0.1:<port>` */
  url: string;
}

/**
 * Compile `module`, serve it over HTTP with `adapter`; with `consumers`, connect
 * the Rheo transport (started by the caller with `app.startAllMicroservices()`).
 */
export async function serveDashboard(
  adapter: Adapter,
  module: ModuleMetadata,
  options: { consumers?: boolean; globalPrefix?: string } = {},
): Promise<DashboardApp> {
  const ref = await Test.createTestingModule(module).compile();
  const app =
    adapter === 'fastify'
      ? ref.createNestApplication(new FastifyAdapter(), { logger: false })
      : ref.createNestApplication({ logger: false });
  if (options.globalPrefix) app.setGlobalPrefix(options.globalPrefix);
  if (options.consumers) app.connectMicroservice({ strategy: app.get(RheoServer) }, { inheritAppConfig: true });
  await app.listen(0, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  return { app, url };
}

/** A JSON request to the app: status, headers, parsed body. */
export async function call(
  url: string,
  path: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Headers; body: unknown; text: string }> {
  const res = await fetch(url + path, {
    method: init.method ?? 'GET',
    headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: the page or an asset
  }
  return { status: res.status, headers: res.headers, body, text };
}

/** The header every action POST carries. */
export const ACTION = { 'x-rheo-dashboard': '1' };
