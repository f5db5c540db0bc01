#!/usr/bin/env node
'use strict';
// Thin launcher: the CLI lives in the esbuild bundle so it starts fast and needs no TS runtime.
const path = require('node:path');
const fs = require('node:fs');
const bundle = path.join(__dirname, '..', 'dist', 'cli.js');
if (!fs.existsSync(bundle)) {
  process.stderr.write('memhint: dist/cli.js is missing; run `npm run build` first\n');
  process.exit(2);
}
require(bundle)
  .main(process.argv.slice(2))
  .then((code) => { process.exitCode = code; })
  .catch((err) => {
    process.stderr.write(`memhint: ${err && err.message ? err.message : String(err)}\n`);
    process.exitCode = 2;
  });
