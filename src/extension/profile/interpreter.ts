// Which Python runs the profiler: the `memhint.python` setting, else the Python extension's active
// interpreter for the file (through @vscode/python-extension) when that extension is installed, else
// `python3` from PATH.
import * as vscode from 'vscode';
import type { Logger } from '../logger';

export interface ResolvedInterpreter {
  readonly path: string;
  readonly source: 'setting' | 'python-extension' | 'default';
}

const PYTHON_EXTENSION_ID = 'ms-python.python';

export async function resolveInterpreter(configured: string | null, resource: vscode.Uri | undefined, log: Logger): Promise<ResolvedInterpreter> {
  if (configured !== null) return { path: expandVariables(configured, resource), source: 'setting' };
  if (vscode.extensions.getExtension(PYTHON_EXTENSION_ID) !== undefined) {
    try {
      // Loaded lazily: the facade activates the Python extension, which only makes sense when it is there.
      const { PythonExtension } = await import('@vscode/python-extension');
      const api = await PythonExtension.api();
      const active = api.environments.getActiveEnvironmentPath(resource);
      const env = await api.environments.resolveEnvironment(active);
      const exe = env?.executable.uri?.fsPath;
      if (exe) return { path: exe, source: 'python-extension' };
      log.warn(`the Python extension's active environment (${active.path}) has no executable; using python3`);
    } catch (err) {
      log.warn(`could not ask the Python extension for the interpreter: ${String(err)}`);
    }
  }
  return { path: 'python3', source: 'default' };
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
