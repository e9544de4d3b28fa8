#!/usr/bin/env node
// The `heapcap` command of the npm package (deploy/npm, packed by
// scripts/pack-npm.mjs): the esbuild bundle, which runs on plain node with no
// dependency installed. A shim rather than the bundle itself so the bundle's
// chunks and the pipe transport's reading thread stay beside each other in dist/.
import '../dist/heapcap.mjs';
