// In the editor the linter's target torch is the torch that will run the code: the interpreter memhint
// runs (memhint.python > Python extension > python3), probed once. An explicit target (memhint.targetTorch,
// [tool.memhint] target-torch) still wins; a project's torch pin is the fallback while the probe runs or
// when the interpreter has no torch. Pure: no `vscode`, so it is unit-tested with a fake probe.
import { parseTorchVersion, type TorchVersion } from '../../lint';
import type { InterpreterInfo } from '../profile/probe';

export type TorchProbe = (python: string) => Promise<InterpreterInfo>;

export class InterpreterTorchVersions {
  private readonly known = new Map<string, TorchVersion | null>();
  private readonly asked = new Set<string>();
  private generation = 0;

  /** `learned` runs when a probe answers (the documents linted meanwhile used the fallback). */
  constructor(
    private readonly probe: TorchProbe,
    private readonly learned: (python: string, version: TorchVersion | null) => void,
  ) {}

  /** PYTHON's torch once probed (null: it has none); undefined while unknown, and the first call starts the probe. */
  versionOf(python: string): TorchVersion | null | undefined {
    if (this.known.has(python)) return this.known.get(python);
    if (!this.asked.has(python)) {
      this.asked.add(python);
      const generation = this.generation;
      const settle = (version: TorchVersion | null): void => {
        if (generation !== this.generation) return; // forgotten meanwhile (the interpreter setting changed)
        this.known.set(python, version);
        this.learned(python, version);
      };
      this.probe(python).then(
        (info) => settle(info.problem === null ? parseTorchVersion(info.torchVersion) : null),
        () => settle(null),
      );
    }
    return undefined;
  }

  /** Drops every answer: the next `versionOf` probes again (an interpreter was changed or installed into). */
  forget(): void {
    this.generation += 1;
    this.known.clear();
    this.asked.clear();
  }
}
