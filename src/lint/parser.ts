// Loads web-tree-sitter and tree-sitter-python's own wasm once per process.
import TS = require('web-tree-sitter');
import * as fs from 'node:fs';
import * as path from 'node:path';
import { RawCursorRuntime } from './raw-cursor';

export type TreeSitter = typeof TS;

export interface PythonParser {
  readonly ts: TreeSitter;
  readonly language: TS.Language;
  readonly parser: TS.Parser;
  /** Direct cursor walks for the mirror's bulk copy; null when this web-tree-sitter does not allow them. */
  readonly raw: RawCursorRuntime | null;
}

/**
 * web-tree-sitter's runtime is one wasm module per process (Parser.init replaces it and would break
 * every parser made before), so its initialisation is the one piece of module-level state under
 * src/lint; the language and the parser are per Linter.
 */
let runtime: Promise<RawCursorRuntime | null> | undefined;

/**
 * Where the two wasm files live. The build copies them next to the bundles (dist/); when running
 * from tsc output or sources they are found in node_modules.
 */
export function wasmPath(file: 'web-tree-sitter.wasm' | 'tree-sitter-python.wasm', wasmDir?: string): string {
  const candidates: string[] = [];
  if (wasmDir) candidates.push(path.join(wasmDir, file));
  candidates.push(path.join(__dirname, file));
  candidates.push(path.join(__dirname, '..', '..', '..', 'dist', file));
  for (const c of candidates) if (fs.existsSync(c)) return c;
  const pkg = file === 'web-tree-sitter.wasm' ? 'web-tree-sitter' : 'tree-sitter-python';
  return require.resolve(`${pkg}/${file}`);
}

/** A parser of its own (the runtime is initialised once per process, see `runtime`). */
export async function loadPythonParser(wasmDir?: string): Promise<PythonParser> {
  const corePath = wasmPath('web-tree-sitter.wasm', wasmDir);
  runtime ??= initRuntime(corePath);
  const raw = await runtime;
  const language = await TS.Language.load(wasmPath('tree-sitter-python.wasm', wasmDir));
  const parser = new TS.Parser();
  parser.setLanguage(language);
  return { ts: TS, language, parser, raw };
}

async function initRuntime(corePath: string): Promise<RawCursorRuntime | null> {
  // Emscripten builds the runtime's module object on the options it is given, so this object ends
  // up holding the wasm exports that raw-cursor.ts calls directly.
  const module = { locateFile: () => corePath };
  await TS.Parser.init(module);
  return RawCursorRuntime.from(module);
}
