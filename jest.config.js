const { specsOf } = require('./test/tiers');

// RHEO_TESTS picks a tier, or `parallel` / `serial` (the two halves of `npm test`,
// see scripts/test.mjs and test/tiers.js); unset, every spec.
const selection = process.env.RHEO_TESTS;

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: selection ? specsOf(selection).map((file) => `<rootDir>/${file}`) : ['**/*.spec.ts'],
  testPathIgnorePatterns: ['/node_modules/'],
  // The slow specs first (test/tiers.js SLOW), so parallel lanes end together.
  testSequencer: '<rootDir>/test/sequencer.js',
  // The package's own subpath, as a backend author imports it.
  moduleNameMapper: { '^nestjs-rheo/backend$': '<rootDir>/lib/backend.ts' },
  // swc transpiles each file alone, as tsconfig.json's isolatedModules already
  // requires, in a fraction of TypeScript's time (a fresh clone transpiles every
  // file once). Types are checked by `npm run typecheck`, never here. The options
  // mirror tsconfig.json's: legacy decorators with their metadata (Nest's injection
  // reads the constructor's parameter types from it), ES2022 class fields.
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      {
        jsc: {
          parser: { syntax: 'typescript', decorators: true },
          transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: true },
          target: 'es2022',
        },
        module: { type: 'commonjs' },
      },
    ],
  },
  testTimeout: 30000,
  // A safety net, not a licence: tests close what they open (a leaked connection
  // was found and fixed this way), but a socket some driver keeps half-open must
  // not hold a finished run hostage. Jest still prints a warning when it forces.
  forceExit: true,
};
