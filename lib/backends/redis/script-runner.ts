import { createHash } from 'node:crypto';
import { isCluster, keySlot } from './cluster';
import type { RedisCommands, RedisPipeline, RedisPipelineResult } from './external';
import { SCRIPTS, ScriptName } from './scripts';

const SHAS = Object.fromEntries(
  Object.entries(SCRIPTS).map(([name, lua]) => [name, createHash('sha1').update(lua).digest('hex')]),
) as Record<ScriptName, string>;

const isNoScript = (err: unknown) => err instanceof Error && /NOSCRIPT/.test(err.message);

/** One script call: what {@link ScriptRunner.queueScript} queued, kept to re-send it. */
export interface ScriptCall {
  name: ScriptName;
  keys: string[];
  args: Array<string | number>;
}

/**
 * Runs our Lua scripts by SHA (EVALSHA), falling back to EVAL when the server
 * does not know the script (after a restart or SCRIPT FLUSH); EVAL also caches it
 * again. A NOSCRIPT reply means the script did not run, so the fallback is safe.
 * Errors are ioredis's, unmapped: the backend maps them (errors.ts).
 *
 * On a Redis Cluster, each call goes to the master that owns its keys' slot (one
 * slot per call: keys.ts), and each node has its own script cache: NOSCRIPT is
 * answered per node (a replica promoted by a failover has none), and the EVAL that
 * follows goes to the same node. Pipelines are split by slot ({@link runPipelined}).
 */
export class ScriptRunner {
  /**
   * @param client the client or cluster every call goes through
   * @param loadTargets where {@link loadAll} loads the scripts: every master of a cluster (default: the client)
   */
  constructor(
    private readonly client: () => RedisCommands,
    private readonly loadTargets: () => RedisCommands[] = () => [client()],
  ) {}

  /** Load every script (once per server, or per master of a cluster; cheap to repeat). */
  async loadAll(): Promise<void> {
    await Promise.all(
      this.loadTargets().map(async (target) => {
        const p = target.pipeline();
        for (const lua of Object.values(SCRIPTS)) p.script('LOAD', lua);
        const results = (await p.exec()) ?? [];
        for (const [err] of results) if (err) throw err;
      }),
    );
  }

  /**
   * Call one script and return its reply. Keys and args travel as one array that
   * ioredis flattens itself: spreading them into the call (`...keys, ...args`) puts
   * every value on the JS stack, which overflows at about 125k values. (The backend
   * keeps each call far smaller anyway, so that no script runs long; this keeps a
   * large call possible at all.)
   */
  async callScript(name: ScriptName, keys: string[], args: Array<string | number>): Promise<unknown> {
    const flat = callArgs(keys, args);
    try {
      return await this.client().evalsha(SHAS[name], keys.length, flat);
    } catch (err) {
      if (!isNoScript(err)) throw err;
      return this.client().eval(SCRIPTS[name], keys.length, flat);
    }
  }

  /**
   * Run script calls pipelined, each call's result or error in call order. On one
   * server: one pipeline, one round trip. On a cluster a pipeline must stay within one
   * node, so the calls are grouped by slot (a stream's calls share one), one pipeline
   * per slot, all sent at once: still about one round trip, and a group that fails
   * (its node down) fails only its own calls.
   */
  async runPipelined(calls: ScriptCall[]): Promise<RedisPipelineResult[]> {
    const client = this.client();
    const groups = new Map<number, number[]>();
    calls.forEach((c, i) => {
      const slot = isCluster(client) ? keySlot(c.keys[0] ?? '') : 0;
      const group = groups.get(slot);
      if (group) group.push(i);
      else groups.set(slot, [i]);
    });
    const results: RedisPipelineResult[] = new Array(calls.length);
    await Promise.all(
      [...groups.values()].map(async (index) => {
        const group = index.map((i) => calls[i]);
        try {
          const p = client.pipeline();
          for (const c of group) this.queueScript(p, c);
          const replies = await this.execPipeline(p, group);
          index.forEach((i, j) => (results[i] = replies[j] ?? [new Error('redis: the pipeline answered fewer replies than calls'), null]));
        } catch (err) {
          for (const i of index) results[i] = [err as Error, null];
        }
      }),
    );
    return results;
  }

  /** Queue a script call on a pipeline; pair with {@link ScriptRunner.execPipeline}. */
  queueScript(pipeline: RedisPipeline, call: ScriptCall): void {
    pipeline.evalsha(SHAS[call.name], call.keys.length, callArgs(call.keys, call.args));
  }

  /**
   * Execute a pipeline of queued script calls in one round trip; a call answered
   * NOSCRIPT did not run and is re-sent alone with EVAL. Returns each call's
   * result or error.
   */
  async execPipeline(pipeline: RedisPipeline, calls: ScriptCall[]): Promise<RedisPipelineResult[]> {
    const results = (await pipeline.exec()) ?? [];
    for (let i = 0; i < results.length; i++) {
      if (isNoScript(results[i][0])) {
        const c = calls[i];
        try {
          results[i] = [null, await this.client().eval(SCRIPTS[c.name], c.keys.length, callArgs(c.keys, c.args))];
        } catch (err) {
          results[i] = [err as Error, null];
        }
      }
    }
    return results;
  }
}

/** KEYS then ARGV as one array (ioredis flattens an array argument without spreading it). */
function callArgs(keys: string[], args: Array<string | number>): string[] {
  return (keys as Array<string | number>).concat(args) as string[];
}
