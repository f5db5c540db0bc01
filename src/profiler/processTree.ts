// Ends everything a profile run started: the harness's process group, and every process that carries the
// run's marker in its environment (MEMHINT_RUN_ID, inherited by whatever the user's script starts, also by
// children that called setsid() and left the group). Synchronous, so signal handlers can call it.
import * as fs from 'node:fs';

export const RUN_ID_ENV = 'MEMHINT_RUN_ID';

/** Pids (other than this process) whose initial environment holds `MEMHINT_RUN_ID=runId`. Linux /proc only. */
export function markedPids(runId: string): number[] {
  const needle = `${RUN_ID_ENV}=${runId}`;
  let names: string[];
  try {
    names = fs.readdirSync('/proc');
  } catch {
    return [];
  }
  const found: number[] = [];
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    let environ: string;
    try {
      environ = fs.readFileSync(`/proc/${pid}/environ`, 'latin1');
    } catch {
      continue; // gone, or another user's
    }
    if (environ.split('\0').includes(needle)) found.push(pid);
  }
  return found;
}

function kill(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** SIGKILLs the group led by `pid`, then every marked process, until none is left (bounded). */
export function killRunTree(pid: number | undefined, runId: string): void {
  if (pid !== undefined) {
    if (process.platform === 'win32') kill(pid);
    // The harness leads its own group (spawned detached). No single-pid fallback: once the harness has
    // been reaped its pid may belong to someone else, while a group id is never reused while it exists.
    else kill(-pid);
  }
  if (process.platform !== 'linux') return;
  for (let round = 0; round < 50; round++) {
    const pids = markedPids(runId);
    if (pids.length === 0) return;
    pids.forEach(kill);
    // A process that was forking while killed may leave one more child: look again (zombies have no environ).
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
  }
}

const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * setTimeout for any delay: Node fires delays above 2^31-1 ms after 1 ms, so long ones are chained.
 * Infinity never fires. Returns the cancel function.
 */
export function startTimer(ms: number, fire: () => void): () => void {
  let handle: NodeJS.Timeout | undefined;
  let cancelled = false;
  const deadline = Date.now() + ms;
  const arm = (): void => {
    if (cancelled) return;
    const left = deadline - Date.now();
    if (left <= 0) return fire();
    handle = setTimeout(arm, Math.min(left, MAX_TIMER_MS));
  };
  if (Number.isFinite(ms)) arm();
  return () => {
    cancelled = true;
    if (handle !== undefined) clearTimeout(handle);
  };
}
