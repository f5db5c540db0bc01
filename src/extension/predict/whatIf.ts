// The what-if choices of "Predict memory on CUDA" (AMP, activation checkpointing, batch size) and how they
// become `memhint predict` options. Pure; no `vscode` here.
import type { PredictOptions } from '../../predict/run';

export type AmpChoice = 'bf16' | 'fp16' | null;

/** What the user picked, remembered per workspace and target. */
export interface WhatIf {
  readonly amp: AmpChoice;
  /** fnmatch pattern(s) of module paths or classes to checkpoint (`Block`, `transformer.h.*`); null: none. */
  readonly checkpoint: string | null;
  /** The setup argument that is the batch size and its value; null: the setup function's default. */
  readonly batch: { readonly arg: string; readonly value: number } | null;
}

export const NO_WHAT_IF: WhatIf = { amp: null, checkpoint: null, batch: null };

export interface PredictTarget {
  readonly python: string;
  readonly script: string;
  readonly function: string;
  readonly setup: string;
  readonly cwd: string;
  readonly deviceMemoryBytes: number | null;
  /** The named GPU's compute capability (memhint.predict.device "H100"), else absent. */
  readonly computeCapability?: string | null;
  readonly timeoutSeconds: number;
}

export function predictOptions(target: PredictTarget, whatIf: WhatIf): PredictOptions {
  return {
    script: target.script,
    function: target.function,
    setup: target.setup,
    setupArgs: whatIf.batch === null ? {} : { [whatIf.batch.arg]: whatIf.batch.value },
    python: target.python,
    deviceMemoryBytes: target.deviceMemoryBytes,
    amp: whatIf.amp,
    checkpoint: whatIf.checkpoint,
    maxSplitSizeBytes: null,
    computeCapability: target.computeCapability ?? null,
    // One warmup call so that optimizer state exists, one predicted call: meta tensors are deterministic.
    warmup: 1,
    steps: 1,
    timeoutMs: target.timeoutSeconds * 1000,
    cwd: target.cwd,
  };
}

/** The what-ifs in words, for the progress title and the notification (`AMP bf16, checkpoint Block, batch=64`). */
export function describeWhatIf(whatIf: WhatIf): string {
  const parts: string[] = [];
  if (whatIf.amp !== null) parts.push(`AMP ${whatIf.amp}`);
  if (whatIf.checkpoint !== null) parts.push(`checkpoint ${whatIf.checkpoint}`);
  if (whatIf.batch !== null) parts.push(`${whatIf.batch.arg}=${whatIf.batch.value}`);
  return parts.join(', ');
}

/** Reads a stored what-if back, dropping anything malformed (workspace state outlives versions). */
export function reviveWhatIf(value: unknown): WhatIf {
  if (typeof value !== 'object' || value === null) return NO_WHAT_IF;
  const v = value as Record<string, unknown>;
  const amp = v.amp === 'bf16' || v.amp === 'fp16' ? v.amp : null;
  const checkpoint = typeof v.checkpoint === 'string' && v.checkpoint.trim() !== '' ? v.checkpoint.trim() : null;
  const b = v.batch as Record<string, unknown> | null | undefined;
  const batch =
    typeof b === 'object' && b !== null && typeof b.arg === 'string' && /^[A-Za-z_]\w*$/.test(b.arg) && typeof b.value === 'number' && Number.isInteger(b.value) && b.value > 0
      ? { arg: b.arg, value: b.value }
      : null;
  return { amp, checkpoint, batch };
}

/** A positive integer typed in the batch-size box, or the reason it is not one. */
export function parseBatchValue(text: string): number | string {
  const n = Number(text.trim());
  return Number.isInteger(n) && n > 0 && n <= 1_000_000 ? n : 'a positive whole number, e.g. 64';
}

/** torch >= 2.0 is needed for meta-tensor prediction; null when the version cannot be read (let the run say). */
export function torchSupportsPrediction(torchVersion: string | null): boolean | null {
  if (torchVersion === null) return null;
  const m = /^(\d+)\./.exec(torchVersion);
  return m === null ? null : Number(m[1]) >= 2;
}
