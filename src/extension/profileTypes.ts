// What one profile run asks for; shared by the command and the runner adapter. No `vscode` here.
export type Backend = 'auto' | 'cpu' | 'cuda';

export interface ProfileRequest {
  readonly python: string;
  readonly script: string;
  /** null: profile the whole script for maxSeconds. */
  readonly function: string | null;
  readonly warmup: number;
  readonly steps: number;
  readonly backend: Backend;
  readonly maxSeconds: number;
  readonly timeoutSeconds: number;
  readonly cwd: string;
}
