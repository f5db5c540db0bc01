// Which Python runs the profiler, and what it has. Precedence (docs/editor.md "Which Python"):
//   1. `memhint.python`, wherever the user set it (folder, workspace, User or Remote settings): an
//      explicit choice for memhint wins. Workspace values need a trusted workspace.
//   2. The Python extension's selected interpreter for the file (through @vscode/python-extension).
//   3. `python3` from PATH (`python` on Windows).
// Each interpreter is then probed once (probe.ts).
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { Logger } from '../logger';
import { within } from './timeLimit';

export type InterpreterSource = 'setting' | 'python-extension' | 'default';

export interface ResolvedInterpreter {
  readonly path: string;
  readonly source: InterpreterSource;
}

const PYTHON_EXTENSION_ID = 'ms-python.python';
/**
 * How long a profile waits for the Python extension to activate and name the interpreter. Its first
 * activation in a window can take several seconds (environment discovery); an extension that never answers
 * gets the fallback with a warning rather than a profile that never starts.
 */
const PYTHON_EXTENSION_WAIT_MS = 30_000;
export const DEFAULT_PYTHON = process.platform === 'win32' ? 'python' : 'python3';

export async function resolveInterpreter(configured: string | null, resource: vscode.Uri | undefined, log: Logger): Promise<ResolvedInterpreter> {
  if (configured !== null) return { path: expandVariables(configured, resource), source: 'setting' };
  if (vscode.extensions.getExtension(PYTHON_EXTENSION_ID) !== undefined) {
    try {
      // Loaded lazily: the facade activates the Python extension, which only makes sense when it is there.
      const { PythonExtension } = await import('@vscode/python-extension');
      const api = await within(PythonExtension.api(), PYTHON_EXTENSION_WAIT_MS, 'the Python extension');
      // Typed as always there, but an extension that is still starting (or a look-alike) may answer nothing.
      const active = api.environments.getActiveEnvironmentPath(resource) as ReturnType<typeof api.environments.getActiveEnvironmentPath> | undefined;
      const env = active === undefined ? undefined : await within(api.environments.resolveEnvironment(active), PYTHON_EXTENSION_WAIT_MS, 'the Python extension');
      const exe = env?.executable.uri?.fsPath;
      if (exe) return { path: exe, source: 'python-extension' };
      log.warn(active === undefined
        ? `the Python extension has no active environment for this file; using ${DEFAULT_PYTHON}`
        : `the Python extension's active environment (${active.path}) has no executable; using ${DEFAULT_PYTHON}`);
    } catch (err) {
      log.warn(`could not ask the Python extension for the interpreter: ${String(err)}`);
    }
  }
  return { path: DEFAULT_PYTHON, source: 'default' };
}

/**
 * Calls `listener` when the Python extension's selected interpreter changes (undefined when the extension
 * is absent or its API fails). Only for callers that already resolved through it: loading the API
 * activates the Python extension.
 */
export async function watchSelectedInterpreter(listener: () => void, log: Logger): Promise<vscode.Disposable | undefined> {
  if (vscode.extensions.getExtension(PYTHON_EXTENSION_ID) === undefined) return undefined;
  try {
    const { PythonExtension } = await import('@vscode/python-extension');
    const api = await within(PythonExtension.api(), PYTHON_EXTENSION_WAIT_MS, 'the Python extension');
    return api.environments.onDidChangeActiveEnvironmentPath(() => listener());
  } catch (err) {
    log.warn(`could not follow the Python extension's interpreter selection: ${String(err)}`);
    return undefined;
  }
}

/** `${workspaceFolder}` and `~` in the setting, as users write them in other Python settings. */
export function expandVariables(value: string, resource: vscode.Uri | undefined): string {
  const folder = (resource && vscode.workspace.getWorkspaceFolder(resource)) ?? vscode.workspace.workspaceFolders?.[0];
  let out = value;
  if (folder !== undefined) out = out.replace(/\$\{workspaceFolder\}/g, folder.uri.fsPath);
  const home = process.env.HOME ?? process.env.USERPROFILE;
  if (home && (out === '~' || out.startsWith('~/'))) out = home + out.slice(1);
  return out;
}

/** Where the choice came from, in the words of the settings UI. */
export function sourceLabel(source: InterpreterSource): string {
  return source === 'setting' ? 'memhint.python' : source === 'python-extension' ? 'Python extension' : 'default';
}

/** A path short enough for a notification: relative to the workspace folder, or with `~` for home. */
export function shortPath(file: string, folder: string | undefined): string {
  if (folder !== undefined) {
    const rel = path.relative(folder, file);
    if (rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel)) return rel;
  }
  const home = os.homedir();
  return home !== '' && file.startsWith(home + path.sep) ? `~${file.slice(home.length)}` : file;
}
