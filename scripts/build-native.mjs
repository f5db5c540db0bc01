// Builds native/ (the memory-sampler addon) with node-gyp against the running Node's own headers,
// offline. Runs as npm's "install" script: a failed build prints why and exits 0, because memhint
// falls back to its JS sampler. `--strict` (npm run build:native) makes a failure fail.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const strict = process.argv.includes('--strict');
const BUILD_TIMEOUT_MS = 5 * 60 * 1000;

function fail(message) {
  process.stderr.write(`memhint: native sampler not built: ${message}\n`);
  if (strict) process.exit(1);
  process.stderr.write('memhint: continuing; the profiler timeline will use the JS sampler (no GPU series, >= 20 ms)\n');
  process.exit(0);
}

if (process.env.MEMHINT_SKIP_NATIVE_BUILD === '1') fail('MEMHINT_SKIP_NATIVE_BUILD=1');
if (process.platform !== 'linux') fail(`the addon reads procfs and supports Linux only (this is ${process.platform})`);

// npm exports its bundled node-gyp to lifecycle scripts; outside npm, find the one next to npm.
function findNodeGyp() {
  const candidates = [process.env.npm_config_node_gyp];
  if (process.env.npm_execpath) {
    candidates.push(path.join(path.dirname(process.env.npm_execpath), '..', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  }
  candidates.push(path.join(path.dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  try {
    candidates.push(createRequire(import.meta.url).resolve('node-gyp/bin/node-gyp.js'));
  } catch {
    // not a direct dependency; fine
  }
  return candidates.find((p) => p && existsSync(p));
}

// Node's headers: npm's nodedir setting, else the install prefix of this node (…/include/node).
// Passing it explicitly stops node-gyp from trying to download headers (there is no network).
function findNodeDir() {
  const configured = process.env.npm_config_nodedir;
  if (configured && existsSync(path.join(configured, 'include', 'node', 'node_api.h'))) return configured;
  const prefix = path.resolve(path.dirname(process.execPath), '..');
  if (existsSync(path.join(prefix, 'include', 'node', 'node_api.h'))) return prefix;
  return undefined;
}

const nodeGyp = findNodeGyp();
if (!nodeGyp) fail('node-gyp not found (npm normally bundles it)');
const nodedir = findNodeDir();
if (!nodedir) fail(`Node headers not found (no include/node/node_api.h under ${path.resolve(path.dirname(process.execPath), '..')}; set npm config nodedir)`);

const args = [nodeGyp, 'rebuild', '--directory', path.join(root, 'native'), `--nodedir=${nodedir}`, '--jobs=max'];
if (!strict) args.push('--loglevel=warn');
const started = Date.now();
const result = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit', timeout: BUILD_TIMEOUT_MS });
if (result.error) fail(`node-gyp did not run: ${result.error.message}`);
if (result.status !== 0) fail(`node-gyp exited with ${result.status ?? result.signal} (needs python3, make and a C++17 compiler: g++)`);
const addon = path.join(root, 'native', 'build', 'Release', 'memhint_sampler.node');
if (!existsSync(addon)) fail(`node-gyp succeeded but ${addon} is missing`);
process.stdout.write(`memhint: native sampler built in ${((Date.now() - started) / 1000).toFixed(1)} s: ${path.relative(root, addon)}\n`);
