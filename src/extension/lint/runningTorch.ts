// The torch that will run a file, as the editor's lint target when nothing explicit sets one (#13): the
// interpreter memhint runs for the file's folder (memhint.python > the Python extension's selected
// interpreter > python3, profile/interpreter.ts), probed once per interpreter. Resolution and probing are
// asynchronous: until they answer the caller falls back to the project's pin, and `onDidChange` fires when
// an answer arrives so documents linted meanwhile are linted again.
import * as vscode from 'vscode';
import type { TorchVersion } from '../../lint';
import type { Logger } from '../logger';
import { resolveInterpreter, sourceLabel, watchSelectedInterpreter } from '../profile/interpreter';
import { InterpreterProbe } from '../profile/probe';
import { onSettingsChanged, readProfileConfig } from '../settings';
import { InterpreterTorchVersions } from './interpreterTorch';

export class RunningTorch implements vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  /** An answer arrived (or an interpreter changed): what `versionFor` returns may differ now. */
  readonly onDidChange = this.changed.event;
  private readonly versions: InterpreterTorchVersions;
  /** The interpreter per workspace folder ('' outside folders); absent while it is being resolved. */
  private readonly interpreters = new Map<string, string>();
  private readonly resolving = new Set<string>();
  /** Bumped by `forget`: a resolution started before it must not land after it. */
  private generation = 0;
  private watchingSelection = false;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly log: Logger, probe: InterpreterProbe = new InterpreterProbe()) {
    this.versions = new InterpreterTorchVersions(
      (python) => probe.probe(python),
      (python, version) => {
        this.log.info(`lint target torch for files run by ${python}: ${version === null ? 'its torch is unknown (project pin or default)' : `${version.major}.${version.minor}`}`);
        this.changed.fire();
      },
    );
    this.disposables.push(
      this.changed,
      onSettingsChanged((e) => {
        if (e.affectsConfiguration('memhint.python')) this.forget();
      }),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('python.defaultInterpreterPath')) this.forget();
      }),
      // Probing needs trust; documents linted before it was granted used the pin.
      vscode.workspace.onDidGrantWorkspaceTrust(() => this.changed.fire()),
    );
  }

  /**
   * The torch of the interpreter that would run this file: null when it has none (or does not run),
   * undefined while unknown (resolution and probe start on the first call) and always in an untrusted
   * workspace, since probing executes the interpreter, which may be the workspace's own environment.
   */
  versionFor(uri: vscode.Uri): TorchVersion | null | undefined {
    if (!vscode.workspace.isTrusted) return undefined;
    const folder = vscode.workspace.getWorkspaceFolder(uri);
    const key = folder?.uri.toString() ?? '';
    const python = this.interpreters.get(key);
    if (python !== undefined) return this.versions.versionOf(python);
    if (!this.resolving.has(key)) {
      this.resolving.add(key);
      const generation = this.generation;
      const scope = folder?.uri ?? uri;
      void resolveInterpreter(readProfileConfig(scope).python, scope, this.log).then((resolved) => {
        if (generation !== this.generation) return; // forgotten meanwhile
        this.resolving.delete(key);
        this.interpreters.set(key, resolved.path);
        this.log.info(`lint: files in ${folder?.name ?? 'no folder'} run with ${resolved.path} (${sourceLabel(resolved.source)})`);
        // Whenever the Python extension was asked (memhint.python unset), not only when it answered: one
        // that had no environment yet (still discovering, nothing selected) and falls back to python3 must
        // still move the target when the user then selects an interpreter there.
        if (resolved.source !== 'setting') this.watchSelection();
        if (this.versions.versionOf(resolved.path) !== undefined) this.changed.fire();
      });
    }
    return undefined;
  }

  /** The user picks another interpreter in the Python extension: resolve again. */
  private watchSelection(): void {
    if (this.watchingSelection) return;
    this.watchingSelection = true;
    void watchSelectedInterpreter(() => this.forget(), this.log).then((d) => {
      if (d !== undefined) this.disposables.push(d);
    });
  }

  private forget(): void {
    this.generation += 1;
    this.interpreters.clear();
    this.resolving.clear();
    this.versions.forget();
    this.changed.fire();
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
