// Child processes that are started over and over (a worker SIGKILLed every
// second) cannot each pay for ts-node: loading the TypeScript compiler and
// transpiling the library costs about 1.5 s of CPU a start, on a machine whose
// cores the test shares. So the parent, which has TypeScript loaded already,
// transpiles the files the children need once into a temporary tree of plain
// CommonJS, and the children run that with `node` (a start then costs ~0.2 s).
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import * as ts from 'typescript';

const ROOT = join(__dirname, '..', '..');

function tsFiles(dir: string): string[] {
  if (!statSync(dir).isDirectory()) return [dir];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return tsFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/**
 * Transpile every `.ts` file under `dirs` (folders or files, relative to the repository) into
 * a new temporary directory, keeping the layout, so relative imports still resolve.
 * Returns the directory. Packages resolve through `NODE_PATH` (see {@link childEnv}).
 */
export function compileTree(dirs: string[]): string {
  const out = mkdtempSync(join(tmpdir(), 'rheo-compiled-'));
  const compilerOptions: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.CommonJS,
    esModuleInterop: true,
    experimentalDecorators: true,
    emitDecoratorMetadata: true,
  };
  for (const dir of dirs) {
    for (const file of tsFiles(join(ROOT, dir))) {
      const { outputText } = ts.transpileModule(readFileSync(file, 'utf8'), { compilerOptions, fileName: file });
      const target = join(out, relative(ROOT, file)).replace(/\.ts$/, '.js');
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, outputText);
    }
  }
  return out;
}

/** The environment a compiled child needs: packages from the repository's node_modules. */
export function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  return { ...process.env, NODE_PATH: join(ROOT, 'node_modules'), ...extra };
}
