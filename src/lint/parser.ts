// Loads web-tree-sitter and tree-sitter-python's own wasm once per process.
import TS = require('web-tree-sitter');
import * as fs from 'node:fs';
import * as path from 'node:path';

export type TreeSitter = typeof TS;

export interface PythonParser {
  readonly ts: TreeSitter;
  readonly language: TS.Language;
  readonly parser: TS.Parser;
}

let loading: Promise<PythonParser> | undefined;

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

/** Initialises tree-sitter once; later calls share the same parser. */
export function loadPythonParser(wasmDir?: string): Promise<PythonParser> {
  loading ??= (async () => {
    const corePath = wasmPath('web-tree-sitter.wasm', wasmDir);
    await TS.Parser.init({ locateFile: () => corePath });
    const language = await TS.Language.load(wasmPath('tree-sitter-python.wasm', wasmDir));
    const parser = new TS.Parser();
    parser.setLanguage(language);
    return { ts: TS, language, parser };
  })();
  return loading;
}
