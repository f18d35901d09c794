import { include, LuaInclude, resolveIncludes, scriptLoader } from '../../lib/backends/redis/scripts/loader';
import { SCRIPTS } from '../../lib/backends/redis/scripts';
import { INCLUDES } from '../../lib/backends/redis/scripts/includes';

const byName = (...includes: LuaInclude[]) => new Map(includes.map((i) => [i.name, i]));
const names = (includes: LuaInclude[]) => includes.map((i) => i.name);

describe('redis script loader', () => {
  const a = include('a', {}, '-- a\n');
  const b = include('b', { needs: ['a'] }, '-- b\n');
  const c = include('c', { needs: ['b', 'a'] }, '-- c\n');
  const d = include('d', {}, '-- d\n');

  it('puts every include after the ones it needs, transitively', () => {
    expect(names(resolveIncludes(['c'], byName(a, b, c, d)))).toEqual(['a', 'b', 'c']);
  });

  it('keeps the order a script lists its includes in where nothing forces another', () => {
    expect(names(resolveIncludes(['d', 'b'], byName(a, b, c, d)))).toEqual(['d', 'a', 'b']);
    expect(names(resolveIncludes(['b', 'd'], byName(a, b, c, d)))).toEqual(['a', 'b', 'd']);
  });

  it('includes an include once however many need it', () => {
    expect(names(resolveIncludes(['a', 'c', 'b'], byName(a, b, c, d)))).toEqual(['a', 'b', 'c']);
    const script = scriptLoader([a, b, c, d]);
    expect(script({ uses: ['b', 'c'] }, '-- body\n')).toBe('-- a\n-- b\n-- c\n-- body\n');
  });

  it('refuses a cycle, naming it', () => {
    const x = include('x', { needs: ['y'] }, '');
    const y = include('y', { needs: ['z'] }, '');
    const z = include('z', { needs: ['x'] }, '');
    expect(() => resolveIncludes(['x'], byName(x, y, z))).toThrow('the includes need each other: x -> y -> z -> x');
    expect(() => resolveIncludes(['a', 'y'], byName(a, x, y, z))).toThrow('y -> z -> x -> y');
    const self = include('self', { needs: ['self'] }, '');
    expect(() => resolveIncludes(['self'], byName(self))).toThrow('self -> self');
  });

  it('refuses an unknown name, naming it and who needs it', () => {
    const typo = include('typo', { needs: ['recrod'] }, '');
    expect(() => resolveIncludes(['typo'], byName(a, typo))).toThrow(
      'the include "typo" needs the include "recrod", which is not defined (defined: a, typo)',
    );
    expect(() => resolveIncludes(['nope'], byName(a))).toThrow('a script needs the include "nope", which is not defined');
  });

  it('checks every include when the loader is made, used or not', () => {
    const x = include('x', { needs: ['y'] }, '');
    const y = include('y', { needs: ['x'] }, '');
    expect(() => scriptLoader([a, x, y])).toThrow('x -> y -> x');
    expect(() => scriptLoader([a, include('lost', { needs: ['gone'] }, '')])).toThrow('"gone", which is not defined');
    expect(() => scriptLoader([a, include('a', {}, '')])).toThrow('the include "a" is defined twice');
  });

  it('refuses a script that lists an include twice', () => {
    expect(() => scriptLoader([a])({ uses: ['a', 'a'] }, '')).toThrow('a script lists the include "a" twice');
  });
});

// The loader's contract on the real scripts: a Lua local function is only callable below its
// definition, and each include is defined once (a second `local function` would shadow the first).
describe('redis scripts: includes', () => {
  const stripComments = (lua: string) => lua.replace(/--[^\n]*/g, '');
  const definedBy = (lua: string) => [...lua.matchAll(/local function (\w+)/g)].map((m) => m[1]);
  const calls = (lua: string, fn: string) => new RegExp(`(?<!function )\\b${fn}\\s*\\(`).test(stripComments(lua));

  it.each(Object.entries(SCRIPTS))('%s defines every function once, above its callers', (_name, lua) => {
    const code = stripComments(lua);
    const defined = definedBy(code);
    expect(new Set(defined).size).toBe(defined.length);
    for (const fn of defined) {
      const at = code.indexOf(`local function ${fn}(`);
      expect(calls(code.slice(0, at), fn)).toBe(false);
    }
  });

  // What a script or an include declares is what its own code calls, so a `uses` or `needs` list
  // can be trusted: neither missing (the loader would leave it out) nor left over.
  it.each(INCLUDES.map((i) => [i.name, i] as const))('the include %s needs exactly what it calls', (_name, inc) => {
    const called = INCLUDES.filter((other) => other !== inc && definedBy(other.lua).some((fn) => calls(inc.lua, fn)));
    expect(names(called).sort()).toEqual([...inc.needs].sort());
  });

  it.each(Object.entries(SCRIPTS))('%s holds the includes its own code calls, and theirs, and no other', (_name, lua) => {
    const held = INCLUDES.filter((inc) => lua.includes(inc.lua));
    const body = held.reduce((rest, inc) => rest.replace(inc.lua, ''), lua);
    const called = INCLUDES.filter((inc) => definedBy(inc.lua).some((fn) => calls(body, fn)));
    const all = byName(...INCLUDES);
    expect(names(resolveIncludes(names(called), all)).sort()).toEqual(names(held).sort());
  });
});
