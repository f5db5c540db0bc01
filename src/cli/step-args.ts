// The command-line grammar `profile` and `predict` share: a SCRIPT.py[::STEP | :LINE] target, options as
// `--name value` or `--name=value`, repeatable options, script arguments after `--`, and typed option values
// (integers, sizes, seconds, choices) with one wording of their usage errors.
import { parseTarget, type TargetSpec } from '../profiler/target';
import { parseByteSize } from '../profiler/units';
import { UsageError } from './usage';

export { UsageError };

export interface ScanRules {
  /** Options that take a value. */
  readonly valued: ReadonlySet<string>;
  /** Valued options that may be given more than once (all values kept, in order). */
  readonly repeatable?: ReadonlySet<string>;
  /** Whether `--` ends the options and what follows goes to the script. */
  readonly scriptArgs?: boolean;
}

/** The command line split into its target, option values and script arguments, nothing interpreted yet. */
export class StepArgs {
  constructor(
    readonly target: string | null,
    private readonly values: ReadonlyMap<string, string>,
    private readonly repeatedValues: ReadonlyMap<string, readonly string[]>,
    readonly scriptArgs: readonly string[],
  ) {}

  has(name: string): boolean {
    return this.values.has(name);
  }

  string(name: string): string | null {
    return this.values.get(name) ?? null;
  }

  repeated(name: string): readonly string[] {
    return this.repeatedValues.get(name) ?? [];
  }

  int(name: string, fallback: number, min: number): number {
    const raw = this.values.get(name);
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (raw.trim() === '' || !Number.isInteger(n) || n < min) throw new UsageError(`${name} must be an integer >= ${min}`);
    return n;
  }

  /** A positive size in bytes (`24GiB`, `512MB`, `4096`), or null when not given. */
  size(name: string): number | null {
    const raw = this.values.get(name);
    if (raw === undefined) return null;
    const n = parseByteSize(raw);
    if (n === null || n <= 0) throw new UsageError(`${name}: "${raw}" is not a size (e.g. 80GiB, 512MB)`);
    return n;
  }

  /** A positive number of seconds, or null when not given. */
  seconds(name: string): number | null {
    const raw = this.values.get(name);
    if (raw === undefined) return null;
    const n = raw.trim() === '' ? NaN : Number(raw);
    if (!Number.isFinite(n) || n <= 0) throw new UsageError(`${name} must be a positive number of seconds, not "${raw}"`);
    return n;
  }

  choice<T extends string>(name: string, choices: readonly T[], fallback: T): T {
    const raw = this.values.get(name) ?? fallback;
    if (!(choices as readonly string[]).includes(raw)) {
      const list = choices.length === 2 ? `${choices[0]} or ${choices[1]}` : `${choices.slice(0, -1).join(', ')} or ${choices[choices.length - 1]}`;
      throw new UsageError(`${name} must be ${list}`);
    }
    return raw as T;
  }

  /** The target, parsed; `missing` words the error when there is none. */
  stepTarget(missing: string): TargetSpec {
    if (this.target === null) throw new UsageError(missing);
    try {
      return parseTarget(this.target);
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
  }
}

export function scanArgs(args: readonly string[], rules: ScanRules): StepArgs {
  let target: string | null = null;
  const values = new Map<string, string>();
  const repeated = new Map<string, string[]>();
  let scriptArgs: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--' && rules.scriptArgs) {
      scriptArgs = args.slice(i + 1);
      break;
    }
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    if (rules.valued.has(name)) {
      const value = eq > 0 && arg.startsWith('--') ? arg.slice(eq + 1) : args[++i];
      if (value === undefined) throw new UsageError(`${name} needs a value`);
      values.set(name, value);
      if (rules.repeatable?.has(name)) repeated.set(name, [...(repeated.get(name) ?? []), value]);
    } else if (arg.startsWith('-')) {
      throw new UsageError(`unknown option ${arg}`);
    } else if (target === null) {
      target = arg;
    } else {
      throw new UsageError(`unexpected argument ${arg}${rules.scriptArgs ? ' (script arguments go after --)' : ''}`);
    }
  }
  return new StepArgs(target, values, repeated, scriptArgs);
}
