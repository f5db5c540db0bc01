// `[tool.memhint]` in pyproject.toml, found by walking up from the linted file (nearest wins),
// like ruff's own discovery. Layered as: defaults < pyproject < caller overrides (CLI flags, editor settings).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { unknownRuleSelectors, type LintSettings } from './engine';
import { compileGlob, type GlobMatcher } from './glob';
import { readRegularFile, UnreadableFile } from './regular-file';
import { parseTorchVersion, type TorchVersion } from './types';

export interface ProjectConfig {
  /** The pyproject.toml it came from, or null when none has a [tool.memhint] table. */
  readonly path: string | null;
  readonly select: readonly string[] | null;
  readonly ignore: readonly string[];
  readonly extendSelect: readonly string[];
  readonly targetTorch: TorchVersion | null;
  /** Glob (relative to the pyproject's folder) -> codes ignored in matching files. */
  readonly perFileIgnores: ReadonlyArray<{ readonly glob: string; readonly pattern: GlobMatcher; readonly codes: readonly string[] }>;
  readonly exclude: ReadonlyArray<{ readonly glob: string; readonly pattern: GlobMatcher }>;
  /** `max-file-size` in bytes (0: no limit), or null when not set. */
  readonly maxFileSize: number | null;
}

export const emptyConfig: ProjectConfig = {
  path: null,
  select: null,
  ignore: [],
  extendSelect: [],
  targetTorch: null,
  perFileIgnores: [],
  exclude: [],
  maxFileSize: null,
};

/** A pyproject.toml larger than this is not a real one: skipped rather than read. */
export const MAX_PYPROJECT_BYTES = 4 * 1024 * 1024;

export class ConfigError extends Error {}

export interface Overrides {
  readonly select?: readonly string[] | null;
  readonly ignore?: readonly string[];
  readonly targetTorch?: TorchVersion | null;
}

/** Parsed pyproject.toml files by path, re-read when their mtime changes; owned by a caller (one CLI run). */
export class ProjectConfigCache {
  private readonly entries = new Map<string, { mtimeMs: number; config: ProjectConfig | null }>();

  get(file: string, mtimeMs: number): ProjectConfig | null | undefined {
    const hit = this.entries.get(file);
    return hit !== undefined && hit.mtimeMs === mtimeMs ? hit.config : undefined;
  }

  set(file: string, mtimeMs: number, config: ProjectConfig | null): void {
    this.entries.set(file, { mtimeMs, config });
  }
}

/**
 * The nearest pyproject.toml with a [tool.memhint] table above `filePath`, parsed (through `cache`
 * when given). A pyproject.toml that is not a regular file (FIFO, device, directory) or is absurdly
 * large is skipped as if absent, and `onSkip` gets a one-line message saying so.
 */
export function findProjectConfig(filePath: string, onSkip: (message: string) => void = () => {}, cache?: ProjectConfigCache): ProjectConfig {
  let dir = path.dirname(path.resolve(filePath));
  for (;;) {
    const candidate = path.join(dir, 'pyproject.toml');
    const config = readIfMemhint(candidate, onSkip, cache);
    if (config !== null) return config;
    const parent = path.dirname(dir);
    if (parent === dir) return emptyConfig;
    dir = parent;
  }
}

function readIfMemhint(file: string, onSkip: (message: string) => void, cache: ProjectConfigCache | undefined): ProjectConfig | null {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch {
    return null;
  }
  const hit = stat.isFile() ? cache?.get(file, stat.mtimeMs) : undefined;
  if (hit !== undefined) return hit;
  let text: string;
  try {
    text = readRegularFile(file, MAX_PYPROJECT_BYTES).bytes.toString('utf8');
  } catch (err) {
    if (!(err instanceof UnreadableFile)) throw err;
    onSkip(`${file}: ${err.reason === 'io' ? `${err.message}; skipped` : err.message}`);
    return null;
  }
  const config = parseProjectConfig(text, file);
  cache?.set(file, stat.mtimeMs, config);
  return config;
}

/** Parses pyproject text; null when it has no [tool.memhint]. Throws ConfigError on bad values. */
export function parseProjectConfig(text: string, file: string): ProjectConfig | null {
  let doc: Record<string, unknown>;
  try {
    doc = parseToml(text);
  } catch (err) {
    throw new ConfigError(`${file}: invalid TOML: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`);
  }
  const tool = doc.tool as Record<string, unknown> | undefined;
  const table = tool?.memhint as Record<string, unknown> | undefined;
  if (table === undefined || typeof table !== 'object') return null;
  const get = (key: string): unknown => table[key] ?? table[key.replace(/-/g, '_')];
  const list = (key: string): string[] | null => {
    const v = get(key);
    if (v === undefined) return null;
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new ConfigError(`${file}: [tool.memhint] ${key} must be a list of strings`);
    return v;
  };
  const codes = (key: string, values: readonly string[] | null): void => {
    const unknown = unknownRuleSelectors(values ?? []);
    if (unknown.length > 0) throw new ConfigError(`${file}: [tool.memhint] ${key} names unknown rule codes or names: ${unknown.join(', ')}`);
  };
  const select = list('select');
  if (select !== null && select.every((s) => s.trim() === '')) {
    throw new ConfigError(`${file}: [tool.memhint] select is empty, so no rule would run (remove it to check every rule)`);
  }
  codes('select', select);
  const ignore = list('ignore') ?? [];
  codes('ignore', ignore);
  const extendSelect = list('extend-select') ?? [];
  codes('extend-select', extendSelect);
  const target = get('target-torch');
  if (typeof target === 'number' || typeof target === 'bigint') {
    // TOML reads `2.10` as the float 2.1: the digits the user wrote are gone, so refuse to guess.
    throw new ConfigError(`${file}: [tool.memhint] target-torch must be a quoted string such as "2.10" (a TOML number loses digits: 2.10 reads as 2.1)`);
  }
  if (target !== undefined && typeof target !== 'string') {
    throw new ConfigError(`${file}: [tool.memhint] target-torch must be a version string such as "2.1"`);
  }
  const targetTorch = target === undefined ? null : parseTorchVersion(target);
  if (target !== undefined && targetTorch === null) throw new ConfigError(`${file}: [tool.memhint] target-torch "${String(target)}" is not a version`);
  const pfi = get('per-file-ignores');
  const perFileIgnores: ProjectConfig['perFileIgnores'][number][] = [];
  if (pfi !== undefined) {
    if (typeof pfi !== 'object' || pfi === null || Array.isArray(pfi)) throw new ConfigError(`${file}: [tool.memhint] per-file-ignores must be a table of glob = [codes]`);
    for (const [glob, codes] of Object.entries(pfi as Record<string, unknown>)) {
      if (!Array.isArray(codes) || !codes.every((x) => typeof x === 'string')) throw new ConfigError(`${file}: per-file-ignores."${glob}" must be a list of codes`);
      const unknown = unknownRuleSelectors(codes);
      if (unknown.length > 0) throw new ConfigError(`${file}: [tool.memhint] per-file-ignores."${glob}" names unknown rule codes or names: ${unknown.join(', ')}`);
      perFileIgnores.push({ glob, pattern: compileGlob(glob), codes });
    }
  }
  const rawMax = get('max-file-size');
  let maxFileSize: number | null = null;
  if (rawMax !== undefined) {
    maxFileSize = typeof rawMax === 'string' || typeof rawMax === 'number' ? parseSize(String(rawMax)) : null;
    if (maxFileSize === null) throw new ConfigError(`${file}: [tool.memhint] max-file-size must be a size such as "16MiB", "500KiB" or a number of bytes (0: no limit)`);
  }
  return {
    path: file,
    select,
    ignore,
    extendSelect,
    targetTorch,
    perFileIgnores,
    exclude: (list('exclude') ?? []).map((glob) => ({ glob, pattern: compileGlob(glob) })),
    maxFileSize,
  };
}

/** Path of `filePath` relative to the config's folder, with forward slashes. */
function relativeToConfig(config: ProjectConfig, filePath: string): string {
  const base = config.path === null ? process.cwd() : path.dirname(config.path);
  return path.relative(base, path.resolve(filePath)).split(path.sep).join('/');
}

export function isExcluded(config: ProjectConfig, filePath: string): boolean {
  const rel = relativeToConfig(config, filePath);
  return config.exclude.some((e) => e.pattern.test(rel));
}

/** Effective settings for one file: defaults < [tool.memhint] < overrides. */
export function settingsForFile(config: ProjectConfig, filePath: string, overrides: Overrides = {}): LintSettings {
  const rel = relativeToConfig(config, filePath);
  const perFile = config.perFileIgnores.filter((p) => p.pattern.test(rel) || p.pattern.test(path.basename(rel))).flatMap((p) => p.codes);
  let select: readonly string[] | null = overrides.select !== undefined ? overrides.select : config.select;
  if (select !== null && config.extendSelect.length > 0 && overrides.select === undefined) select = [...select, ...config.extendSelect];
  return {
    select,
    ignore: [...config.ignore, ...perFile, ...(overrides.ignore ?? [])],
    targetTorch: overrides.targetTorch !== undefined && overrides.targetTorch !== null ? overrides.targetTorch : config.targetTorch,
  };
}

export function loadConfigForFile(filePath: string, overrides: Overrides = {}): LintSettings {
  return settingsForFile(findProjectConfig(filePath), filePath, overrides);
}

const SIZE_UNITS: Record<string, number> = { '': 1, b: 1, k: 1024, kb: 1024, kib: 1024, m: 1024 ** 2, mb: 1024 ** 2, mib: 1024 ** 2, g: 1024 ** 3, gb: 1024 ** 3, gib: 1024 ** 3 };

/** Bytes in "16MiB", "500 KB", "1048576" (units are binary: K = 1024); null when not a size. */
export function parseSize(text: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(text);
  if (!m) return null;
  const unit = SIZE_UNITS[m[2].toLowerCase()];
  if (unit === undefined) return null;
  const bytes = Math.round(Number(m[1]) * unit);
  return Number.isSafeInteger(bytes) ? bytes : null;
}
