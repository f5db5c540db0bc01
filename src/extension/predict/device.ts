// The device a prediction is checked against: `memhint.predict.device` as a size ("80GB", "24 GiB") or a
// GPU name ("A100 80GB", "RTX 4090"). Pure; no `vscode` here.
import { findGpu, gpuFamilies } from '../../predict/gpus';
import { parseByteSize } from '../../profiler/units';

export interface DeviceMemory {
  readonly bytes: number;
  /** What the notification and the webview say ("A100 80GB, 80 GiB" or "80 GB"). */
  readonly label: string;
  /** Set when a GPU was named: its compute capability (the predicted cuBLAS workspace depends on it). */
  readonly computeCapability?: string;
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
  const gpu = findGpu(trimmed);
  if (gpu !== null) {
    return { bytes: gpu.bytes, label: `${gpu.name} (${(gpu.bytes / 1024 ** 2).toLocaleString('en-US')} MiB)`, computeCapability: gpu.computeCapability };
  }
  return {
    error: `memhint.predict.device "${trimmed}" is neither a size (80GB, 24 GiB) nor a GPU memhint knows (${gpuFamilies()})`,
  };
}
