// Extension-host suite for an untrusted workspace (the server runs with workspace trust enabled).
import { runMochaIn } from '../runner';

export function run(): Promise<void> {
  return runMochaIn(__dirname);
}
