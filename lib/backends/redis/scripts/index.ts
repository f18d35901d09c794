/**
 * The Lua scripts of the Redis backend, one module per script, in the style of
 * BullMQ's `commands/*.lua`: each module opens with its KEYS, ARGV, return value
 * and errors. Pieces several scripts share live in `includes/`, one named piece
 * per module, so no piece of Lua is written twice. Each include declares the
 * includes its own code calls (`include('frontier', { needs: ['chunked', 'record'] }, lua)`),
 * each script only the ones its body calls (`script({ uses: [...] }, body)`), and the
 * loader (loader.ts) puts in front of the body, when the module loads, every
 * include needed, transitively, each once and below the ones it needs (a Lua local
 * is only callable below its definition). A cycle or an unknown name throws then.
 *
 * Conventions shared by every script:
 * - every key a script touches arrives in KEYS (cluster-safe: all share the stream's
 *   hash tag, see ../keys.ts; layout and claimTurn touch one key each, outside any stream);
 * - the caller passes `now` from the backend's clock (by default the store's time,
 *   measured with TIME outside the scripts: ADR 041), so a ManualClock can expire leases;
 * - an error the caller should see as a RheoError is raised as `RHEO:<code>[:<detail>]`
 *   (includes/error.ts; mapped by ../errors.ts);
 * - delivery records, dead letters and positions are described in includes/record.ts,
 *   includes/dead-letter.ts and ../group-config.ts; the log entry id of sequence s is
 *   `0-<s>`, and it is the lease's receipt;
 * - numbers are concatenated into strings only when below 10^14 (Lua 5.1 prints 14 digits).
 *
 * Bounded work. A script blocks the whole server while it runs, so no script may do
 * work that grows with the backlog. Work that can (walking the frontier over acked
 * records, rewinding a replayed partition, redriving every dead letter, trimming a
 * partition, purging dead letters by time) is done in
 * slices of at most `budget` records per call; the caller passes the budget and
 * calls again (tidy) until nothing is left. The state after every slice is a
 * consistent state of its own, so a process dying between slices loses nothing:
 * what is left is visible in the keys (a terminal record at frontier + 1, a
 * `rw:<p>` rewind target) and fetch and inspect report it, so the next fetch or lag
 * of any process finishes it. Bulk calls are cut into calls of a bounded number of
 * ops by the caller. See docs/adr/014-redis-bounded-scripts.md.
 */
import { APPEND } from './append';
import { CANCEL_DELAYED } from './cancel-delayed';
import { CLAIM_TURN } from './claim-turn';
import { COUNT_DEAD_LETTERS } from './count-dead-letters';
import { CREATE_GROUP } from './create-group';
import { CREATE_STREAM } from './create-stream';
import { DEAD_LETTERS } from './dead-letters';
import { DELETE_GROUP } from './delete-group';
import { FETCH } from './fetch';
import { INSPECT } from './inspect';
import { LAYOUT } from './layout';
import { PAUSE_GROUP } from './pause-group';
import { PURGE } from './purge';
import { REDRIVE } from './redrive';
import { RELEASE } from './release';
import { RELEASE_TURN } from './release-turn';
import { RENEW } from './renew';
import { REOPEN } from './reopen';
import { REPLAY } from './replay';
import { RESCHEDULE } from './reschedule';
import { RESET } from './reset';
import { RESUME_GROUP } from './resume-group';
import { SET_RETENTION } from './set-retention';
import { SETTLE } from './settle';
import { SKIP } from './skip';
import { TIDY } from './tidy';
import { TRIM } from './trim';
import { UPDATE_GROUP } from './update-group';

/** The scripts by name, as loaded with SCRIPT LOAD. */
export const SCRIPTS = {
  createStream: CREATE_STREAM,
  createGroup: CREATE_GROUP,
  append: APPEND,
  fetch: FETCH,
  renew: RENEW,
  settle: SETTLE,
  release: RELEASE,
  replay: REPLAY,
  tidy: TIDY,
  reopen: REOPEN,
  redrive: REDRIVE,
  reset: RESET,
  inspect: INSPECT,
  deadLetters: DEAD_LETTERS,
  setRetention: SET_RETENTION,
  trim: TRIM,
  purge: PURGE,
  countDeadLetters: COUNT_DEAD_LETTERS,
  claimTurn: CLAIM_TURN,
  releaseTurn: RELEASE_TURN,
  deleteGroup: DELETE_GROUP,
  updateGroup: UPDATE_GROUP,
  pauseGroup: PAUSE_GROUP,
  resumeGroup: RESUME_GROUP,
  skip: SKIP,
  reschedule: RESCHEDULE,
  cancelDelayed: CANCEL_DELAYED,
  layout: LAYOUT,
} as const;

/** The name of one script. */
export type ScriptName = keyof typeof SCRIPTS;
