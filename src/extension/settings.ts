// Every memhint setting, read and validated in one place. Other modules get typed values, never raw
// configuration lookups.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { parseTorchVersion, type TorchVersion } from '../lint';
import type { BackendChoice } from '../profiler/launcher';
import { parseBytes } from './format';
import { defaultThresholds, type HintColorBy, type HintMode, type HintThresholds } from './hints/model';
import type { EditorWrap } from './hints/fit';
import { parseDeviceMemory, type DeviceMemory } from './predict/device';
import { SettingValues } from './settingValues';

export const SECTION = 'memhint';

export interface LintConfig {
  readonly enable: boolean;
  /** null: not set here, the pyproject (or every rule) decides. */
  readonly select: readonly string[] | null;
  readonly ignore: readonly string[];
  /** null: not set here. */
  readonly targetTorch: TorchVersion | null;
  readonly delayMs: number;
}

export interface ProfileConfig {
  /** The `memhint.python` setting; null when unset (or ignored because the workspace is untrusted). */
  readonly python: string | null;
  readonly steps: number;
  readonly warmup: number;
  readonly backend: BackendChoice;
  readonly maxSeconds: number;
  readonly timeoutSeconds: number;
  /** Ranks to launch (torchrun, or directly on torch 1.x); 1: one process. */
  readonly nprocPerNode: number;
  /** `memhint.profile.args`: the script's own arguments (what follows `--` on the command line). */
  readonly scriptArgs: readonly string[];
  /** `memhint.profile.script`: the script that runs a module's loop (absolute), or null: the file itself. */
  readonly entryScript: string | null;
}

export interface HintsConfig {
  readonly enable: boolean;
  readonly mode: HintMode;
  readonly colorBy: HintColorBy;
  /** 1-based column hints start at (0: right after the code). */
  readonly alignColumn: number;
  /** Characters before a hint is cut with an ellipsis (0: no limit). */
  readonly maxLength: number;
  /** Last column a hint may reach, shortened with an ellipsis to fit (0: the editor's wrap column, if any). */
  readonly maxColumn: number;
  readonly thresholds: HintThresholds;
  readonly codeLens: boolean;
}

export interface PredictConfig {
  /** `memhint.predict.device` as a size or GPU name; null: not set (no fits check) or not understood. */
  readonly device: DeviceMemory | null;
  /** Seconds after which a prediction is stopped (`memhint.profile.timeout`). */
  readonly timeoutSeconds: number;
}

/** Problems found while reading settings, shown once in the log. */
export interface SettingsProblems {
  readonly problems: string[];
}

/** Typed reads of the `memhint` section for SCOPE; wrong types become problems (settingValues.ts). */
function valuesOf(scope: vscode.ConfigurationScope | undefined, problems: string[]): { config: vscode.WorkspaceConfiguration; values: SettingValues } {
  const config = vscode.workspace.getConfiguration(SECTION, scope);
  return { config, values: new SettingValues((key) => config.get<unknown>(key), SECTION, problems) };
}

export function readLintConfig(scope?: vscode.ConfigurationScope, problems: string[] = []): LintConfig {
  const { values } = valuesOf(scope, problems);
  const select = values.stringList('lint.select');
  const torchText = values.string('targetTorch');
  const targetTorch = parseTorchVersion(torchText);
  if (torchText !== '' && targetTorch === null) problems.push(`memhint.targetTorch "${torchText}" is not a version such as "2.1"; ignored`);
  return {
    enable: values.boolean('lint.enable', true),
    select: select === null || select.length === 0 ? null : select,
    ignore: values.stringList('lint.ignore') ?? [],
    targetTorch,
    delayMs: values.integer('lint.delay', 150, 0, 5000),
  };
}

export function readProfileConfig(scope?: vscode.ConfigurationScope, problems: string[] = []): ProfileConfig {
  const { config: c, values } = valuesOf(scope, problems);
  // In an untrusted workspace VS Code already ignores workspace values of restricted settings; reading
  // only the user's value here makes that explicit for the interpreter path, and says so.
  const pythonInspect = c.inspect<unknown>('python');
  const python = vscode.workspace.isTrusted
    ? values.string('python')
    : new SettingValues(() => pythonInspect?.globalValue, SECTION, problems).string('python');
  if (!vscode.workspace.isTrusted) {
    // VS Code hides restricted values of an untrusted workspace even from inspect(): read the files.
    const ignoredRaw = pythonInspect?.workspaceFolderValue ?? pythonInspect?.workspaceValue ?? workspaceFilePython() ?? '';
    const ignored = typeof ignoredRaw === 'string' ? ignoredRaw.trim() : '';
    if (ignored !== '') problems.push(`memhint.python "${ignored}" from this workspace's settings is ignored until you trust the workspace (Restricted Mode)`);
  }
  return {
    python: python === '' ? null : python,
    steps: values.integer('profile.steps', 3, 1, 1000),
    warmup: values.integer('profile.warmup', 1, 0, 1000),
    backend: values.choice('profile.backend', ['auto', 'cpu', 'cuda'] as const, 'auto'),
    maxSeconds: values.integer('profile.maxSeconds', 30, 1, 86_400),
    timeoutSeconds: values.integer('profile.timeout', 600, 5, 86_400),
    nprocPerNode: values.integer('profile.nprocPerNode', 1, 1, 64),
    scriptArgs: values.stringList('profile.args') ?? [],
    entryScript: entryScriptOf(values.string('profile.script'), scope),
  };
}

/** `memhint.profile.script`, relative to the file's workspace folder (or absolute, `~`); null when unset. */
function entryScriptOf(value: string, scope?: vscode.ConfigurationScope): string | null {
  if (value === '') return null;
  const expanded = value.startsWith('~/') ? path.join(os.homedir(), value.slice(2)) : value;
  if (path.isAbsolute(expanded)) return expanded;
  const uri = scope instanceof vscode.Uri ? scope : undefined;
  const folder = uri ? vscode.workspace.getWorkspaceFolder(uri) : vscode.workspace.workspaceFolders?.[0];
  return folder ? path.join(folder.uri.fsPath, expanded) : null;
}

export function readHintsConfig(scope?: vscode.ConfigurationScope, problems: string[] = []): HintsConfig {
  const { values } = valuesOf(scope, problems);
  const raw = values.object('hints.thresholds');
  const read = (key: keyof HintThresholds): number => {
    const v = raw[key];
    if (v === undefined || v === null) return defaultThresholds[key];
    const bytes = typeof v === 'string' || typeof v === 'number' ? parseBytes(v) : null;
    if (bytes === null) {
      problems.push(`memhint.hints.thresholds.${key} ${JSON.stringify(v)} is not a size such as "64 MiB"; using the default`);
      return defaultThresholds[key];
    }
    return bytes;
  };
  const medium = read('medium');
  const large = Math.max(medium, read('large'));
  return {
    enable: values.boolean('hints.enable', true),
    mode: values.choice('hints.mode', ['all', 'currentLine', 'aboveThreshold'] as const, 'all'),
    colorBy: values.choice('hints.colorBy', ['peak', 'liveAtPeak'] as const, 'peak'),
    alignColumn: values.integer('hints.alignColumn', 0, 0, 500),
    maxLength: values.integer('hints.maxLength', 80, 0, 1000),
    maxColumn: values.integer('hints.maxColumn', 0, 0, 1000),
    thresholds: { hide: read('hide'), medium, large },
    codeLens: values.boolean('codeLens.enable', true),
  };
}

export function readPredictConfig(scope?: vscode.ConfigurationScope, problems: string[] = []): PredictConfig {
  const { values } = valuesOf(scope, problems);
  const raw = values.raw('predict.device') ?? '';
  const parsed = typeof raw === 'string' ? parseDeviceMemory(raw) : { error: `memhint.predict.device ${JSON.stringify(raw)} is not text such as "80GB" or "A100 80GB"` };
  let device: DeviceMemory | null = null;
  if (parsed !== null && 'error' in parsed) problems.push(`${parsed.error}; predicting without a fits check`);
  else device = parsed;
  return { device, timeoutSeconds: values.integer('profile.timeout', 600, 5, 86_400) };
}

/** Fires `listener` when any memhint setting changes. */
/** `editor.wordWrap` and `editor.wordWrapColumn` as they apply to `document` (its language's overrides too). */
export function editorWrapOf(document: vscode.TextDocument): EditorWrap {
  const editor = vscode.workspace.getConfiguration('editor', { uri: document.uri, languageId: document.languageId });
  return { wordWrap: editor.get<string>('wordWrap', 'off'), wordWrapColumn: editor.get<number>('wordWrapColumn', 80) };
}

export function onSettingsChanged(listener: (e: vscode.ConfigurationChangeEvent) => void): vscode.Disposable {
  return vscode.workspace.onDidChangeConfiguration((e) => {
    if (e.affectsConfiguration(SECTION)) listener(e);
  });
}

/**
 * `memhint.python` as written in the workspace's settings files (each folder's .vscode/settings.json, the
 * .code-workspace file), found by a plain text match: only to tell the user it is ignored, never to run it.
 */
function workspaceFilePython(): string | null {
  const files = (vscode.workspace.workspaceFolders ?? []).map((f) => path.join(f.uri.fsPath, '.vscode', 'settings.json'));
  const ws = vscode.workspace.workspaceFile;
  if (ws !== undefined && ws.scheme === 'file') files.push(ws.fsPath);
  for (const file of files) {
    try {
      const m = /"memhint\.python"\s*:\s*"((?:[^"\\]|\\.)*)"/.exec(fs.readFileSync(file, 'utf8'));
      if (m !== null && m[1].trim() !== '') return m[1];
    } catch {
      // no such file: nothing set there
    }
  }
  return null;
}
