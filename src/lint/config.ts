// `[tool.memhint]` in pyproject.toml, found by walking up from the linted file (nearest wins),
// like ruff's own discovery. Layered as: defaults < pyproject < caller overrides (CLI flags, editor settings).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import type { LintSettings } from './engine';
import { parseTorchVersion, type TorchVersion } from './types';

export interface ProjectConfig {
  /** The pyproject.toml it came from, or null when none has a [tool.memhint] table. */
  readonly path: string | null;
  readonly select: readonly string[] | null;
  readonly ignore: readonly string[];
  readonly extendSelect: readonly string[];
  readonly targetTorch: TorchVersion | null;
  /** Glob (relative to the pyproject's folder) -> codes ignored in matching files. */
  readonly perFileIgnores: ReadonlyArray<{ readonly glob: string; readonly pattern: RegExp; readonly codes: readonly string[] }>;
  readonly exclude: ReadonlyArray<{ readonly glob: string; readonly pattern: RegExp }>;
}

export const emptyConfig: ProjectConfig = {
  path: null,
  select: null,
  ignore: [],
  extendSelect: [],
  targetTorch: null,
  perFileIgnores: [],
  exclude: [],
};

export class ConfigError extends Error {}

export interface Overrides {
  readonly select?: readonly string[] | null;
  readonly ignore?: readonly string[];
  readonly targetTorch?: TorchVersion | null;
}

const cache = new Map<string, { mtimeMs: number; config: ProjectConfig | null }>();

/** The nearest pyproject.toml with a [tool.memhint] table above `filePath`, parsed. */
export function findProjectConfig(filePath: string): ProjectConfig {
  let dir = path.dirname(path.resolve(filePath));
  for (;;) {
    const candidate = path.join(dir, 'pyproject.toml');
    const config = readIfMemhint(candidate);
    if (config !== null) return config;
    const parent = path.dirname(dir);
    if (parent === dir) return emptyConfig;
    dir = parent;
  }
}

function readIfMemhint(file: string): ProjectConfig | null {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch {
    return null;
  }
  const hit = cache.get(file);
  if (hit !== undefined && hit.mtimeMs === stat.mtimeMs) return hit.config;
  const config = parseProjectConfig(fs.readFileSync(file, 'utf8'), file);
  cache.set(file, { mtimeMs: stat.mtimeMs, config });
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
  const target = get('target-torch');
  if (target !== undefined && typeof target !== 'string' && typeof target !== 'number') {
    throw new ConfigError(`${file}: [tool.memhint] target-torch must be a version string such as "2.1"`);
  }
  const targetTorch = target === undefined ? null : parseTorchVersion(String(target));
  if (target !== undefined && targetTorch === null) throw new ConfigError(`${file}: [tool.memhint] target-torch "${String(target)}" is not a version`);
  const pfi = get('per-file-ignores');
  const perFileIgnores: ProjectConfig['perFileIgnores'][number][] = [];
  if (pfi !== undefined) {
    if (typeof pfi !== 'object' || pfi === null || Array.isArray(pfi)) throw new ConfigError(`${file}: [tool.memhint] per-file-ignores must be a table of glob = [codes]`);
    for (const [glob, codes] of Object.entries(pfi as Record<string, unknown>)) {
      if (!Array.isArray(codes) || !codes.every((x) => typeof x === 'string')) throw new ConfigError(`${file}: per-file-ignores."${glob}" must be a list of codes`);
      perFileIgnores.push({ glob, pattern: globToRegExp(glob), codes });
    }
  }
  return {
    path: file,
    select: list('select'),
    ignore: list('ignore') ?? [],
    extendSelect: list('extend-select') ?? [],
    targetTorch,
    perFileIgnores,
    exclude: (list('exclude') ?? []).map((glob) => ({ glob, pattern: globToRegExp(glob) })),
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

/** gitignore-flavoured globs: `**` spans folders, `*` and `?` stay within one. */
export function globToRegExp(glob: string): RegExp {
  let re = '';
  const g = glob.replace(/^\.\//, '');
  for (let i = 0; i < g.length; i++) {
    const ch = g[i];
    if (ch === '*') {
      if (g[i + 1] === '*') {
        i++;
        if (g[i + 1] === '/') {
          i++;
          re += '(?:.*/)?';
        } else re += '.*';
      } else re += '[^/]*';
    } else if (ch === '?') re += '[^/]';
    else re += ch.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  // A bare name or folder glob matches at any depth and everything below it, as ruff does.
  const anchored = g.includes('/') ? `^${re}` : `^(?:.*/)?${re}`;
  return new RegExp(`${anchored}(?:/.*)?$`);
}
