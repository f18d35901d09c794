#!/usr/bin/env bash
# Type check of the published typings as a user compiles them: a project with
# `strict` and `skipLibCheck: false` that installed NO optional peer (no typeorm,
# pg, better-sqlite3, ioredis, @nestjs/terminus) must compile against
# nestjs-rheo's .d.ts. A typing that imports a driver fails here with
# "Cannot find module 'typeorm'" (lib/backends/*/external.ts hold the driver
# shapes instead).
#
# Builds the package into a temp dir (the repo's dist is left alone), lays it out
# as node_modules/nestjs-rheo next to links to the non-driver peers only, writes a
# small consumer and a backend author's file (the two entries, ADR 042) and runs
# the repo's tsc on them. Exits non-zero on any error.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
tsc="$root/node_modules/.bin/tsc"
work="$(mktemp -d "${TMPDIR:-/tmp}/rheo-types.XXXXXX")"
trap 'rm -rf "$work"' EXIT

pkg="$work/node_modules/nestjs-rheo"
mkdir -p "$pkg"
"$tsc" -p "$root/tsconfig.build.json" --outDir "$pkg/dist"
cp "$root/package.json" "$pkg/package.json"

# The peers a Nest app always has, and nothing optional. Their own dependencies
# resolve from the repo (tsc follows the links to their real paths), but no path
# from nestjs-rheo's typings reaches the repo's node_modules: a driver import
# there cannot resolve.
for dep in @nestjs/common @nestjs/core @nestjs/microservices rxjs reflect-metadata @types/node; do
  mkdir -p "$work/node_modules/$(dirname "$dep")"
  ln -s "$root/node_modules/$dep" "$work/node_modules/$dep"
done
for driver in typeorm pg better-sqlite3 ioredis @nestjs/terminus @nestjs/typeorm; do
  if [ -e "$work/node_modules/$driver" ]; then echo "test/types: $driver must not be installed here" >&2; exit 1; fi
done

cat > "$work/package.json" <<'JSON'
{ "name": "rheo-types-consumer", "private": true }
JSON

cat > "$work/tsconfig.json" <<'JSON'
{
  "compilerOptions": {
    "target": "ES2022",
    "module": "node16",
    "moduleResolution": "node16",
    "types": ["node"],
    "strict": true,
    "skipLibCheck": false,
    "noEmit": true,
    "experimentalDecorators": true,
    "emitDecoratorMetadata": true,
    "esModuleInterop": true
  },
  "files": ["consumer.ts", "backend-author.ts"]
}
JSON

cat > "$work/consumer.ts" <<'TS'
import 'reflect-metadata';
import { Controller, Module } from '@nestjs/common';
import { Ctx, Payload } from '@nestjs/microservices';
import {
  memoryBackend,
  postgresBackend,
  redisBackend,
  rheoEntities,
  rheoMigrations,
  RheoClient,
  RheoConsumer,
  RheoContext,
  RheoModule,
  RheoReject,
  sqliteBackend,
  typeormBackend,
  type Backend,
  type PostgresBackendOptions,
  type RedisBackendOptions,
  type SqliteBackendOptions,
  type TypeormBackendOptions,
} from 'nestjs-rheo';

interface Order {
  id: string;
  amount: number;
}

@Controller()
export class BillingController {
  constructor(private readonly rheo: RheoClient) {}

  @RheoConsumer({ stream: 'orders', group: 'billing', maxDemand: 10, concurrency: 2 })
  async bill(@Payload() order: Order, @Ctx() ctx: RheoContext): Promise<void> {
    if (order.amount < 0) throw new RheoReject('negative amount');
    await this.rheo.append('invoices', { key: order.id, payload: { order: ctx.event.id, amount: order.amount } });
  }
}

@Module({
  imports: [RheoModule.forRoot({ backend: memoryBackend(), streams: [{ name: 'orders', partitions: 2 }, { name: 'invoices' }] })],
  controllers: [BillingController],
})
export class AppModule {}

const postgres: PostgresBackendOptions = { url: 'postgres://app@db:5432/app', schema: 'rheo', poolSize: 5, install: 'none' };
const sqlite: SqliteBackendOptions = { database: 'rheo.db', lockTimeoutMs: 1000 };
const redis: RedisBackendOptions = { url: 'redis://127.0.0.1:6379', prefix: 'rheo' };
export const backends = (): Backend[] => [postgresBackend(postgres), sqliteBackend(sqlite), redisBackend(redis)];
export const borrowed = (dataSource: TypeormBackendOptions['dataSource']): Backend => typeormBackend({ dataSource, install: 'none' });
export const migrations = () => rheoMigrations({ schema: 'rheo' });
export const entities = () => rheoEntities({ schema: 'rheo' });
TS

# A backend author's file: the Backend interface and the shared vocabulary from the
# main entry, the operations' own types and helpers from `nestjs-rheo/backend`.
cat > "$work/backend-author.ts" <<'TS'
import { RheoError, type Backend, type Lease } from 'nestjs-rheo';
import { backoffDelay, createCapabilities, fetched, type ConformanceTarget, type FetchRequest, type FetchedLeases } from 'nestjs-rheo/backend';

export const capabilities = createCapabilities({ guarantees: { durable: false }, mechanisms: {} });
export const claim = (request: FetchRequest, leases: Lease[]): FetchedLeases => {
  if (request.limit < 1) throw new RheoError('invalid_argument', 'limit must be positive');
  return fetched(leases, []);
};
export const nextTry = (attempt: number) => backoffDelay({ initialMs: 100, factor: 2, maxMs: 1000 }, attempt);
export type Target = ConformanceTarget & { create: () => Promise<Backend> };
TS

cd "$work"
"$tsc" -p tsconfig.json
echo "test/types: a consumer and a backend author's file, without drivers, type-check against the typings of nestjs-rheo and nestjs-rheo/backend (strict, skipLibCheck: false)"
