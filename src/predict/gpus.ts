// Common training GPUs: memory as `nvidia-smi --query-gpu=memory.total` reports it and compute capability
// (which sets PyTorch's default cuBLAS workspace: 32 MiB on 9.0, 8 MiB + 128 KiB elsewhere). Shared by the
// CLI's `predict --gpu` and the editor's `memhint.predict.device`. Pure.

const MiB = 1024 ** 2;

export interface Gpu {
  readonly name: string;
  readonly bytes: number;
  /** MAJOR.MINOR, as torch.cuda.get_device_capability() gives it. */
  readonly computeCapability: string;
}

/**
 * The figure the caching allocator can at most reserve, minus the CUDA context (stated in the report's
 * notes). Names are matched loosely (case, spaces, "NVIDIA", "GB" suffixes); the longest match wins so that
 * "A100 80GB" is not read as "A100".
 */
const GPUS: readonly (readonly [name: string, mib: number, computeCapability: string])[] = [
  ['H200', 143_771, '9.0'],
  ['H100', 81_559, '9.0'],
  ['H100 80GB', 81_559, '9.0'],
  ['A100', 40_960, '8.0'],
  ['A100 40GB', 40_960, '8.0'],
  ['A100 80GB', 81_920, '8.0'],
  ['L40S', 46_068, '8.9'],
  ['L4', 23_034, '8.9'],
  ['A10G', 23_028, '8.6'],
  ['A10', 23_028, '8.6'],
  ['A6000', 49_140, '8.6'],
  ['RTX A6000', 49_140, '8.6'],
  ['V100', 16_384, '7.0'],
  ['V100 16GB', 16_384, '7.0'],
  ['V100 32GB', 32_768, '7.0'],
  ['T4', 15_360, '7.5'],
  ['RTX 4090', 24_564, '8.9'],
  ['RTX 3090', 24_576, '8.6'],
  ['RTX 4080', 16_376, '8.9'],
  ['RTX 3080', 10_240, '8.6'],
];

function normalise(name: string): string {
  return name.toLowerCase().replace(/nvidia|geforce|tesla/g, '').replace(/[\s_-]+/g, '').replace(/gib$/, 'gb');
}

export function knownGpuNames(): string[] {
  return GPUS.map(([name]) => name);
}

/** The GPU families for an error message ("H200, H100, A100, ..."): names without a memory-size variant. */
export function gpuFamilies(): string {
  return knownGpuNames().filter((n) => !/\d+GB$/.test(n)).join(', ');
}

/** The GPU a name means, or null. */
export function findGpu(text: string): Gpu | null {
  const wanted = normalise(text.trim());
  const match = GPUS.filter(([name]) => wanted === normalise(name)).sort((a, b) => b[0].length - a[0].length)[0];
  return match === undefined ? null : { name: match[0], bytes: match[1] * MiB, computeCapability: match[2] };
}
