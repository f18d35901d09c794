/**
 * Every include, and `script`, the script builder over them (../loader.ts): a
 * script module declares the includes its own Lua calls and gets the includes it
 * needs in front of its body, in a valid order. Add an include here to make it
 * usable; its name is then checked by the compiler in every script's `uses`.
 */
import { scriptLoader } from '../loader';
import { CHECK_GROUP } from './check-group';
import { CHUNKED } from './chunked';
import { DEAD_LETTER } from './dead-letter';
import { ERROR } from './error';
import { FENCE } from './fence';
import { FLOW } from './flow';
import { FRONTIER } from './frontier';
import { KEY_PLACES } from './key-places';
import { LOG_ENTRY } from './log-entry';
import { POSITIONS } from './positions';
import { RECORD } from './record';
import { REOPEN_ONE } from './reopen-one';
import { RETENTION } from './retention';
import { START } from './start';
import { TRIM_POINT } from './trim-point';
import { WAITING } from './waiting';
import { WAKE } from './wake';

/** Every include a script may use. */
export const INCLUDES = [
  CHECK_GROUP,
  CHUNKED,
  DEAD_LETTER,
  ERROR,
  FENCE,
  FLOW,
  FRONTIER,
  KEY_PLACES,
  LOG_ENTRY,
  POSITIONS,
  RECORD,
  REOPEN_ONE,
  RETENTION,
  START,
  TRIM_POINT,
  WAITING,
  WAKE,
] as const;

/** The name of one include. */
export type IncludeName = (typeof INCLUDES)[number]['name'];

/** `script({ uses: [...] }, body)`: a script's Lua, the includes it uses (and theirs) first. */
export const script = scriptLoader<IncludeName>(INCLUDES);
