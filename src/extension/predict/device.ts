// The device a prediction is checked against: `memhint.predict.device` as a size ("80GB", "24 GiB") or a
// GPU name ("A100 80GB", "RTX 4090"). Pure; no `vscode` here.
import { parseByteSize } from '../../profiler/units';

export interface DeviceMemory {
  readonly bytes: number;
  /** What the notification and the webview say ("A100 80GB, 80 GiB" or "80 GB"). */
  readonly label: string;
}

const MiB = 1024 ** 2;

/**
 * Total memory of common training GPUs as `nvidia-smi --query-gpu=memory.total` reports it (MiB): the
 * figure the caching allocator can at most reserve, minus the CUDA context (stated in the report's notes).
 * Names are matched loosely (case, spaces, "NVIDIA", "GB" suffixes); the longest match wins so that
 * "A100 80GB" is not read as "A100".
 */
const GPUS: readonly (readonly [name: string, mib: number])[] = [
  ['H200', 143_771],
  ['H100', 81_559],
  ['H100 80GB', 81_559],
  ['A100', 40_960],
  ['A100 40GB', 40_960],
  ['A100 80GB', 81_920],
  ['L40S', 46_068],
  ['L4', 23_034],
  ['A10G', 23_028],
  ['A10', 23_028],
  ['A6000', 49_140],
  ['RTX A6000', 49_140],
  ['V100', 16_384],
  ['V100 16GB', 16_384],
  ['V100 32GB', 32_768],
  ['T4', 15_360],
  ['RTX 4090', 24_564],
  ['RTX 3090', 24_576],
  ['RTX 4080', 16_376],
  ['RTX 3080', 10_240],
];

function normalise(name: string): string {
  return name.toLowerCase().replace(/nvidia|geforce|tesla/g, '').replace(/[\s_-]+/g, '').replace(/gib$/, 'gb');
}

export function knownGpuNames(): string[] {
  return GPUS.map(([name]) => name);
}

/**
 * `null` for an empty setting (no fits check); else the bytes or a one-line reason. A bare number is a
 * size in bytes, as for the CLI's --device-memory.
 */
export function parseDeviceMemory(text: string): DeviceMemory | { readonly error: string } | null {
  const trimmed = text.trim();
  if (trimmed === '') return null;
  const size = parseByteSize(trimmed);
  if (size !== null) {
    if (size <= 0) return { error: `memhint.predict.device "${trimmed}" is not a positive size` };
    return { bytes: size, label: trimmed };
  }
  const wanted = normalise(trimmed);
  const match = GPUS.filter(([name]) => wanted === normalise(name)).sort((a, b) => b[0].length - a[0].length)[0];
  if (match !== undefined) return { bytes: match[1] * MiB, label: `${match[0]} (${match[1].toLocaleString('en-US')} MiB)` };
  return {
    error: `memhint.predict.device "${trimmed}" is neither a size (80GB, 24 GiB) nor a GPU memhint knows (${knownGpuNames().filter((n) => !/\d+GB$/.test(n)).join(', ')})`,
  };
}
