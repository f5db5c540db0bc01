// What one profile run asks for; shared by the command and the runner adapter. No `vscode` here.
import type { BackendChoice } from '../../profiler/launcher';

export interface ProfileRequest {
  readonly python: string;
  readonly script: string;
  /** null: profile the whole script for maxSeconds. */
  readonly function: string | null;
  /** With no function: the 1-based header line of the loop whose iterations are the steps; null or
   *  absent: the harness finds the training loop, else runs the whole script. */
  readonly loopLine?: number | null;
  /** With loopLine: the loop is in this file, a module that `script` imports and runs (`--loop FILE:LINE`). */
  readonly loopFile?: string | null;
  /** The script's own arguments (what follows `--` on the command line); absent: none. */
  readonly scriptArgs?: readonly string[];
  readonly warmup: number;
  readonly steps: number;
  readonly backend: BackendChoice;
  readonly maxSeconds: number;
  readonly timeoutSeconds: number;
  readonly cwd: string;
  /** Ranks (torch.distributed) to run the script on; absent or 1: one process. */
  readonly nprocPerNode?: number;
}
