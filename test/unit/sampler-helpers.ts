// Shared helpers for the sampler tests: a Python child that allocates a known amount on command.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import * as readline from 'node:readline';

export const PYTHON = process.env.MEMHINT_TEST_PYTHON ?? '/usr/bin/python3';

// Writes every byte (bytes * n fills the buffer), so the pages are resident, not just reserved.
const ALLOCATOR = `
import sys
held = []
print("ready", flush=True)
for line in sys.stdin:
    cmd = line.split()
    if cmd[0] == "alloc":
        held.append(b"\\x01" * int(cmd[1]))
        print("allocated", flush=True)
    elif cmd[0] == "exit":
        break
`;

export class AllocatorChild {
  readonly proc: ChildProcessWithoutNullStreams;
  private readonly lines: string[] = [];
  private waiters: Array<() => void> = [];

  constructor() {
    this.proc = spawn(PYTHON, ['-c', ALLOCATOR], { stdio: ['pipe', 'pipe', 'pipe'] });
    readline.createInterface({ input: this.proc.stdout }).on('line', (l) => {
      this.lines.push(l);
      for (const w of this.waiters.splice(0)) w();
    });
  }

  get pid(): number {
    if (this.proc.pid === undefined) throw new Error(`could not start ${PYTHON}`);
    return this.proc.pid;
  }

  async expect(line: string, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.lines.includes(line)) {
      if (Date.now() > deadline) throw new Error(`child did not print ${line}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
    this.lines.splice(this.lines.indexOf(line), 1);
  }

  async allocate(bytes: number): Promise<void> {
    this.proc.stdin.write(`alloc ${bytes}\n`);
    await this.expect('allocated');
  }

  kill(): void {
    this.proc.kill('SIGKILL');
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function median(values: ArrayLike<number>): number {
  const sorted = Array.from(values).sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** Polls until pred() holds; throws after timeoutMs. */
export async function waitFor(pred: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}
