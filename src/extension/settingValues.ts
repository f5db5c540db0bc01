// Typed reads of raw setting values. VS Code hands back whatever settings.json holds, whatever the
// schema says: a half-written file gives `"memhint.lint.enable": "false"`, `"memhint.targetTorch": 2.1`
// or `"memhint.lint.ignore": "MH003"`. A wrong type falls back to the default with a problem line for
// the log (never a crash, never a silently different meaning). No `vscode` here, so it is unit-tested.

/** A value as settings.json spells it, for messages: `"yes"`, `2.1`, `["MH003"]`. */
function spell(value: unknown): string {
  try {
    const text = JSON.stringify(value);
    return text === undefined ? String(value) : text.length > 60 ? `${text.slice(0, 57)}...` : text;
  } catch {
    return String(value);
  }
}

export class SettingValues {
  /**
   * @param get     the raw value of `section.key` (undefined when unset)
   * @param section the prefix in messages (`memhint`)
   * @param problems where a wrong value is described
   */
  constructor(
    private readonly get: (key: string) => unknown,
    private readonly section: string,
    private readonly problems: string[],
  ) {}

  /** A value that is absent or JSON null reads as unset. */
  raw(key: string): unknown {
    const value = this.get(key);
    return value === null ? undefined : value;
  }

  /** Records a problem with KEY's value; returns FALLBACK for the caller's convenience. */
  reject<T>(key: string, value: unknown, expected: string, fallback: T, fallbackText: string = spell(fallback)): T {
    this.problems.push(`${this.section}.${key} is ${spell(value)}, not ${expected}; using ${fallbackText}`);
    return fallback;
  }

  boolean(key: string, fallback: boolean): boolean {
    const value = this.raw(key);
    if (value === undefined) return fallback;
    return typeof value === 'boolean' ? value : this.reject(key, value, 'true or false', fallback);
  }

  /** Trimmed text; '' when unset. */
  string(key: string, fallback = ''): string {
    const value = this.raw(key);
    if (value === undefined) return fallback;
    return typeof value === 'string' ? value.trim() : this.reject(key, value, 'text (in quotes)', fallback, fallback === '' ? 'no value' : spell(fallback));
  }

  /** A whole number within [min, max]: fractions are rounded, values outside are clamped (and said). */
  integer(key: string, fallback: number, min: number, max: number): number {
    const value = this.raw(key);
    if (value === undefined) return fallback;
    if (typeof value !== 'number' || !Number.isFinite(value)) return this.reject(key, value, 'a number', fallback);
    const clamped = Math.min(max, Math.max(min, Math.round(value)));
    if (clamped !== value) this.problems.push(`${this.section}.${key} is ${spell(value)}; using ${clamped} (a whole number from ${min} to ${max})`);
    return clamped;
  }

  /** One of CHOICES. */
  choice<T extends string>(key: string, choices: readonly T[], fallback: T): T {
    const value = this.raw(key);
    if (value === undefined) return fallback;
    const found = choices.find((c) => c === value);
    return found ?? this.reject(key, value, `one of ${choices.map((c) => JSON.stringify(c)).join(', ')}`, fallback);
  }

  /** A list of non-empty strings (null when unset); entries that are not text are dropped and said. */
  stringList(key: string): string[] | null {
    const value = this.raw(key);
    if (value === undefined) return null;
    if (!Array.isArray(value)) return this.reject(key, value, 'a list such as ["MH003"]', null, 'no value');
    const items = value as unknown[];
    const wrong = items.filter((v) => typeof v !== 'string');
    if (wrong.length > 0) this.problems.push(`${this.section}.${key} has entries that are not text (${wrong.map(spell).join(', ')}); they are ignored`);
    return items.filter((v): v is string => typeof v === 'string' && v.trim() !== '').map((v) => v.trim());
  }

  /** An object of settings ({} when unset). */
  object(key: string): Record<string, unknown> {
    const value = this.raw(key);
    if (value === undefined) return {};
    if (typeof value !== 'object' || Array.isArray(value)) return this.reject(key, value, 'an object such as {"medium": "64 MiB"}', {}, 'the defaults');
    return value as Record<string, unknown>;
  }
}
