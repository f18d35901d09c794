// Where the flow suite's handler runs write their start and end rows (flow-check.ts's
// RunRow): outside the library, so the checker counts what handlers did, not what
// the library says they did. A row is written, and its write awaited, before the
// handler goes on: a run whose end row is stored had finished its work before its
// ack was sent, and a SIGKILL loses at most the row being written.
//   postgres  a table of its own in the test's schema;
//   redis     a list per scenario under the test's key prefix;
//   file      a file of JSON lines, each appended synchronously (one write each, kept
//             by the kernel once written however the process dies), for SQLite;
//   memory    an array, for in-process consumers.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import Redis from 'ioredis';
import { Pool } from 'pg';
import type { RunRow } from './flow-check';

export interface FlowLog {
  write(row: RunRow): Promise<void>;
  rows(): Promise<RunRow[]>;
  close(): Promise<void>;
}

/** How a process opens the log of one scenario (JSON-able, passed to children). */
export type FlowLogSpec =
  | { kind: 'postgres'; url: string; schema: string; scenario: string }
  | { kind: 'redis'; url: string; key: string }
  | { kind: 'file'; path: string }
  | { kind: 'memory'; scenario: string };

const memoryLogs = new Map<string, RunRow[]>();

const COLUMNS = ['phase', 'event_id', 'lease_id', 'key', 'seq', 'pid', 'consumer', 'attempt', 'leased_at', 'expires_at', 'at'];

async function pgLog(spec: Extract<FlowLogSpec, { kind: 'postgres' }>): Promise<FlowLog> {
  const pool = new Pool({ connectionString: spec.url, max: 4 });
  const table = `"${spec.schema}".flow_checker_runs`;
  // The parent opens the log before any child starts, so the children's CREATE finds the table.
  await pool.query(
    `CREATE SCHEMA IF NOT EXISTS "${spec.schema}";
       CREATE TABLE IF NOT EXISTS ${table} (
         scenario text NOT NULL, phase text NOT NULL, event_id text NOT NULL, lease_id text NOT NULL, key text NOT NULL,
         seq int NOT NULL, pid int NOT NULL, consumer text NOT NULL, attempt int NOT NULL,
         leased_at bigint NOT NULL, expires_at bigint NOT NULL, at bigint NOT NULL)`,
  );
  return {
    async write(r) {
      await pool.query(
        `INSERT INTO ${table} (scenario, ${COLUMNS.join(', ')}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
        [spec.scenario, r.phase, r.eventId, r.leaseId, r.key, r.seq, r.pid, r.consumer, r.attempt, r.leasedAt, r.expiresAt, r.at],
      );
    },
    async rows() {
      const { rows } = await pool.query<Record<string, string | number>>(`SELECT ${COLUMNS.join(', ')} FROM ${table} WHERE scenario = $1`, [
        spec.scenario,
      ]);
      return rows.map((x) => ({
        phase: x.phase as RunRow['phase'],
        eventId: String(x.event_id),
        leaseId: String(x.lease_id),
        key: String(x.key),
        seq: Number(x.seq),
        pid: Number(x.pid),
        consumer: String(x.consumer),
        attempt: Number(x.attempt),
        leasedAt: Number(x.leased_at),
        expiresAt: Number(x.expires_at),
        at: Number(x.at),
      }));
    },
    close: () => pool.end(),
  };
}

function redisLog(spec: Extract<FlowLogSpec, { kind: 'redis' }>): FlowLog {
  const redis = new Redis(spec.url);
  return {
    async write(r) {
      await redis.rpush(spec.key, JSON.stringify(r));
    },
    async rows() {
      return (await redis.lrange(spec.key, 0, -1)).map((s) => JSON.parse(s) as RunRow);
    },
    async close() {
      await redis.quit();
    },
  };
}

function fileLog(spec: Extract<FlowLogSpec, { kind: 'file' }>): FlowLog {
  return {
    async write(r) {
      appendFileSync(spec.path, `${JSON.stringify(r)}\n`);
    },
    async rows() {
      if (!existsSync(spec.path)) return [];
      return readFileSync(spec.path, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as RunRow);
    },
    async close() {},
  };
}

function memoryLog(spec: Extract<FlowLogSpec, { kind: 'memory' }>): FlowLog {
  if (!memoryLogs.has(spec.scenario)) memoryLogs.set(spec.scenario, []);
  const rows = memoryLogs.get(spec.scenario)!;
  return {
    async write(r) {
      rows.push({ ...r });
    },
    async rows() {
      return rows.map((r) => ({ ...r }));
    },
    async close() {},
  };
}

/** Open the log `spec` names; on PostgreSQL its table exists once this resolves. */
export async function openFlowLog(spec: FlowLogSpec): Promise<FlowLog> {
  if (spec.kind === 'postgres') return pgLog(spec);
  if (spec.kind === 'redis') return redisLog(spec);
  return spec.kind === 'file' ? fileLog(spec) : memoryLog(spec);
}
