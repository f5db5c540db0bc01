// Counts module-level mutable state under a source folder (default src/lint): node scripts/count-module-state.mjs [DIR] [--list]
import { createRequire } from 'node:module';
import * as fs from 'node:fs';
import * as path from 'node:path';

const require = createRequire(import.meta.url);
const { moduleState } = require('./module-state.cjs');
const args = process.argv.slice(2);
const dir = path.resolve(args.find((a) => !a.startsWith('--')) ?? 'src/lint');
const walk = (d) => fs.readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(d, e.name)) : e.name.endsWith('.ts') ? [path.join(d, e.name)] : []));
const files = walk(dir);
const found = moduleState(files, { root: path.dirname(dir) });
if (args.includes('--list')) for (const f of found) console.log(`${f.file}:${f.line} ${f.name}: ${f.kind}`);
console.log(`${found.length} module-level mutable state in ${new Set(found.map((f) => f.file)).size} of ${files.length} files under ${path.relative(process.cwd(), dir) || '.'}`);
