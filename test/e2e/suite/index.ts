// Extension-host suite for a trusted workspace: every *.test.js under this folder except untrusted/.
import { runMochaIn } from './runner';

export function run(): Promise<void> {
  return runMochaIn(__dirname, ['untrusted']);
}
