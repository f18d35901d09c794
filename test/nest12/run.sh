#!/usr/bin/env bash
# Nest 12 smoke check: build the package, pack it as a user would install it,
# install it next to Nest 12 in this directory, and run the sample scenario.
# Plain Node (not Jest): Nest 12 is ESM-only and Jest's CJS mode cannot load it
# on Node 20 (reference/nestjs.md §6.2), while require(esm) works in Node >= 20.19.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
npm run build --silent
rm -f "$here"/nestjs-rheo*.tgz
tarball="$(npm pack --silent --pack-destination "$here")"
mv "$here/$tarball" "$here/nestjs-rheo.tgz"
cd "$here"
# The package's files, not the repo's node_modules (Nest 11): a fresh install each time.
rm -rf node_modules/nestjs-rheo
npm install --no-audit --no-fund --no-package-lock --loglevel=error
node smoke.js
