/**
 * The loader of the Lua includes: a script names the includes its own code calls,
 * and the loader puts in front of it every include it needs, transitively, each
 * once, each after the includes it needs. Lua 5.1 has no modules inside EVAL, and
 * a `local function` can only call the locals defined above it, so the order is
 * what makes a script valid; writing it by hand in every script is what this
 * replaces (after BullMQ's `--- @include` lines and its script loader).
 *
 * Everything is resolved when the modules load: a cycle, an unknown name or a name
 * defined twice throws then, naming the includes, so no broken script reaches Redis.
 */

/** One named piece of Lua that several scripts share, and the includes its own code calls. */
export interface LuaInclude<N extends string = string> {
  /** The include's name, what a script's `uses` and another include's `needs` say. */
  readonly name: N;
  /** The includes whose locals this one calls (not theirs: the loader follows them). */
  readonly needs: readonly string[];
  /** The Lua text: local functions and the tables they keep for the call. */
  readonly lua: string;
}

/**
 * Declare an include.
 *
 * @param name its name, unique among the includes
 * @param deps `needs`: the includes this one's code calls directly
 * @param lua its Lua text
 */
export function include<N extends string>(name: N, deps: { readonly needs?: readonly string[] }, lua: string): LuaInclude<N> {
  return { name, needs: deps.needs ?? [], lua };
}

/**
 * The includes a script that calls `uses` needs, in the order they must be defined:
 * depth first, an include's needs (in the order it lists them) before it, each once.
 *
 * @throws Error naming the cycle (`a -> b -> a`) when includes need each other, or
 *   the unknown name and who asked for it
 */
export function resolveIncludes(uses: readonly string[], includes: ReadonlyMap<string, LuaInclude>): LuaInclude[] {
  const ordered: LuaInclude[] = [];
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (name: string, neededBy: string): void => {
    if (done.has(name)) return;
    const at = path.indexOf(name);
    if (at >= 0) throw new Error(`redis scripts: the includes need each other: ${[...path.slice(at), name].join(' -> ')}`);
    const found = includes.get(name);
    if (!found) {
      const known = [...includes.keys()].sort().join(', ');
      throw new Error(`redis scripts: ${neededBy} needs the include "${name}", which is not defined (defined: ${known})`);
    }
    path.push(name);
    for (const need of found.needs) visit(need, `the include "${name}"`);
    path.pop();
    done.add(name);
    ordered.push(found);
  };
  const seen = new Set<string>();
  for (const name of uses) {
    if (seen.has(name)) throw new Error(`redis scripts: a script lists the include "${name}" twice`);
    seen.add(name);
    visit(name, 'a script');
  }
  return ordered;
}

/**
 * A script builder over a set of includes: `script({ uses }, body)` is the Lua of the
 * includes `uses` resolves to, in order, then the body. The whole set is checked
 * first (names unique; every include resolves, so an unused include's cycle or
 * typo throws too).
 *
 * @param includes every include a script may use
 * @throws Error on a name defined twice, a cycle or an unknown name (see {@link resolveIncludes})
 */
export function scriptLoader<N extends string>(
  includes: readonly LuaInclude<N>[],
): (deps: { readonly uses: readonly N[] }, body: string) => string {
  const byName = new Map<string, LuaInclude>();
  for (const inc of includes) {
    if (byName.has(inc.name)) throw new Error(`redis scripts: the include "${inc.name}" is defined twice`);
    byName.set(inc.name, inc);
  }
  resolveIncludes([...byName.keys()], byName);
  return (deps, body) =>
    resolveIncludes(deps.uses, byName)
      .map((inc) => inc.lua)
      .join('') + body;
}
