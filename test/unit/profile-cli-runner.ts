// `memhint profile ARGS` in a child node process, through the compiled command module (so the suites need
// `npm run compile`, not the bundle). Exit code, stdout and stderr are what the tests read.
import { execFile } from 'node:child_process';
import * as path from 'node:path';

const COMMAND = path.resolve(__dirname, '../../..', 'out/src/cli/profile-command.js');

export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** `env`: variables added to this process's environment for the child (and the ranks it starts). */
export function runProfileCli(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  const script = `require(${JSON.stringify(COMMAND)}).runProfileCommand(process.argv.slice(1)).then((c) => { process.exitCode = c; })`;
  return new Promise((resolve) => {
    execFile(process.execPath, ['-e', script, ...args], { maxBuffer: 64 * 1024 * 1024, env: { ...process.env, ...env } }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}
