// Parser of the harness's JSON-lines protocol (python/memhint_harness/protocol.py). Each message is one
// line `{"v": 1, "type": ...}` on a dedicated pipe. Anything else (bad JSON, an unknown version or type, a
// final line without a newline) is a protocol error: reported, never guessed at.
import { reportProblem, type Capabilities, type ProfileReport, type SourceLocation } from './report';

export const PROTOCOL_VERSION = 1;

export interface HelloMessage {
  readonly type: 'hello';
  readonly harnessVersion: string;
  readonly python: string;
  readonly pythonVersion: string;
  readonly torchVersion: string;
  readonly backend: 'cpu' | 'cuda';
  readonly device: string;
  readonly cudaPath?: 'trace' | 'dispatch';
  /** The line tracer's global trace function: built in C (`c`) or the pure-Python fallback (`python`). */
  readonly tracer?: 'c' | 'python';
  readonly pid: number;
  readonly capabilities: Capabilities;
}

export interface ProgressMessage {
  readonly type: 'progress';
  readonly step: number;
  readonly warmup: boolean;
  readonly ms: number;
  readonly liveBytes: number;
  /** Number of profiled steps requested. */
  readonly of: number;
}

export interface ResultMessage {
  readonly type: 'result';
  readonly report: ProfileReport;
}

/** Error kinds the harness sends; the launcher adds its own (crash, timeout, protocol). */
export type HarnessErrorKind =
  | 'bad_arguments'
  | 'torch_missing'
  | 'unsupported_torch'
  | 'missing_target'
  | 'target_not_called'
  | 'syntax_error'
  | 'script_exit'
  | 'user_exception'
  | 'unsupported_target'
  | 'oom';

export interface ErrorMessage {
  readonly type: 'error';
  readonly kind: HarnessErrorKind;
  readonly message: string;
  readonly traceback: string | null;
  readonly location: SourceLocation | null;
}

export type HarnessMessage = HelloMessage | ProgressMessage | ResultMessage | ErrorMessage;

export class ProtocolError extends Error {}

/** A well-formed line without the run's nonce: not the harness's (user code writing to the descriptor). */
export class ForgedMessageError extends ProtocolError {}

/**
 * Validates one decoded line. Throws ProtocolError with the reason when it is not a valid message, and
 * ForgedMessageError when `nonce` is given and the line does not carry it.
 */
export function parseMessage(line: string, nonce?: string): HarnessMessage {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    throw new ProtocolError(`malformed protocol line (not JSON): ${preview(line)}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ProtocolError(`protocol line is not an object: ${preview(line)}`);
  }
  const m = value as Record<string, unknown>;
  if (m.v !== PROTOCOL_VERSION) {
    throw new ProtocolError(`unsupported protocol version ${JSON.stringify(m.v)} (expected ${PROTOCOL_VERSION})`);
  }
  if (nonce !== undefined && m.nonce !== nonce) throw new ForgedMessageError('protocol line without the run nonce');
  switch (m.type) {
    case 'hello':
      if (typeof m.torchVersion !== 'string' || typeof m.backend !== 'string' || typeof m.pid !== 'number') {
        throw new ProtocolError('hello message lacks torchVersion/backend/pid');
      }
      return m as unknown as HelloMessage;
    case 'progress':
      if (typeof m.step !== 'number' || typeof m.warmup !== 'boolean') {
        throw new ProtocolError('progress message lacks step/warmup');
      }
      return m as unknown as ProgressMessage;
    case 'result':
      {
        const problem = reportProblem(m.report);
        if (problem) throw new ProtocolError(`result message does not carry a valid version-1 report: ${problem}`);
      }
      return m as unknown as ResultMessage;
    case 'error':
      if (typeof m.kind !== 'string' || typeof m.message !== 'string') {
        throw new ProtocolError('error message lacks kind/message');
      }
      return { traceback: null, location: null, ...m } as unknown as ErrorMessage;
    default:
      throw new ProtocolError(`unknown protocol message type ${JSON.stringify(m.type)}`);
  }
}

function preview(line: string): string {
  return line.length > 120 ? `${line.slice(0, 120)}…` : line;
}

/** Splits a byte stream into lines; keeps the unterminated tail so truncation can be detected at the end. */
export class LineDecoder {
  private buffer = '';
  private readonly decoder = new TextDecoder('utf-8');

  push(chunk: Uint8Array): string[] {
    this.buffer += this.decoder.decode(chunk, { stream: true });
    const lines = this.buffer.split('\n');
    this.buffer = lines.pop() ?? '';
    return lines.filter((l) => l.length > 0);
  }

  /** Bytes after the last newline when the stream ended: a truncated message, or '' when clean. */
  end(): string {
    this.buffer += this.decoder.decode();
    const rest = this.buffer;
    this.buffer = '';
    return rest;
  }
}
