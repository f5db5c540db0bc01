// Test helpers: a shared Linter and the `# expect: MH001` annotation convention for fixtures.
import { Linter, type LintSettings, defaultSettings, type Finding } from '../../../src/lint';

let linter: Promise<Linter> | undefined;

export function getLinter(): Promise<Linter> {
  linter ??= Linter.create();
  return linter;
}

let oracle: Promise<Linter> | undefined;

/**
 * The reference for differential tests: a separate Linter (its own language and parser) whose lints
 * each run in a session of their own, so it shares no cache, index or tree with the incremental path
 * it checks (only web-tree-sitter's process-wide wasm runtime).
 */
export async function getOracle(): Promise<Linter> {
  oracle ??= Linter.create();
  const [o, l] = await Promise.all([oracle, getLinter()]);
  if (o === l || o.parser.parser === l.parser.parser || o.parser.language === l.parser.language) throw new Error('the oracle shares its parser with the linter under test');
  return o;
}

export async function lint(source: string, settings: Partial<LintSettings> = {}): Promise<Finding[]> {
  return (await getLinter()).lintText(source, { ...defaultSettings, ...settings });
}

/** "line:code" (1-based line) for each finding, for compact assertions. */
export function summarize(source: string, findings: readonly Finding[]): string[] {
  return findings.map((f) => `${lineOf(source, f.start) + 1}:${f.code}`);
}

/** Expected "line:code" pairs from `# expect: MH001[, MH002]` comments in a fixture. */
export function expectations(source: string): string[] {
  const out: string[] = [];
  source.split(/\r?\n/).forEach((text, i) => {
    const m = /#\s*expect:\s*([A-Z0-9, ]+)/.exec(text);
    if (m) for (const code of m[1].split(/[ ,]+/).filter(Boolean)) out.push(`${i + 1}:${code}`);
  });
  return out.sort();
}

function lineOf(source: string, offset: number): number {
  let line = 0;
  for (let i = 0; i < offset && i < source.length; i++) if (source.charCodeAt(i) === 10) line++;
  return line;
}

/** Each finding as one comparable line: code, range, message and fix. */
export function findingsView(findings: readonly Finding[]): string[] {
  return findings.map((f) => `${f.code}@${f.start}-${f.end} ${f.message} ${JSON.stringify(f.fix)}`);
}

/** Deterministic pseudo-random numbers in [0, 1) (xorshift32). */
export function seededRandom(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 0x100000000;
  };
}
