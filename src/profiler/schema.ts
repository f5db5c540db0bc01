// Deep validation of a report against schema/report.schema.json, the one contract the Python harness and
// the TypeScript readers share. A small validator for the JSON Schema subset that file uses (type, const,
// enum, properties, required, additionalProperties, items, anyOf, minimum, local $ref): no dependency in
// the extension bundle, and a clear path to the first problem ("lines[3].self.net: expected integer").
import reportSchema from '../../schema/report.schema.json';

export interface Schema {
  readonly $ref?: string;
  readonly type?: string | readonly string[];
  readonly const?: unknown;
  readonly enum?: readonly unknown[];
  readonly properties?: Readonly<Record<string, Schema>>;
  readonly required?: readonly string[];
  readonly additionalProperties?: boolean | Schema;
  readonly items?: Schema;
  readonly anyOf?: readonly Schema[];
  readonly minimum?: number;
  readonly definitions?: Readonly<Record<string, Schema>>;
}

export const REPORT_SCHEMA: Schema = reportSchema;

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function typeMatches(value: unknown, type: string | readonly string[]): boolean {
  const actual = typeOf(value);
  const wanted = typeof type === 'string' ? [type] : type;
  return wanted.some((t) => t === actual || (t === 'number' && actual === 'integer'));
}

/** The first problem of `value` against `schema` (resolving `$ref` in `root`), or null when it conforms. */
export function schemaProblem(value: unknown, schema: Schema, root: Schema = schema, at = ''): string | null {
  const where = at || '(report)';
  if (schema.$ref !== undefined) {
    const name = /^#\/definitions\/(.+)$/.exec(schema.$ref)?.[1];
    const target = name !== undefined ? root.definitions?.[name] : undefined;
    if (!target) return `${where}: unresolvable schema reference ${schema.$ref}`;
    return schemaProblem(value, target, root, at);
  }
  if (schema.anyOf) {
    const problems = schema.anyOf.map((s) => schemaProblem(value, s, root, at));
    if (problems.some((p) => p === null)) return null;
    return problems.find((p) => p !== null && !p.startsWith(`${where}: expected `)) ?? `${where}: matches none of the allowed shapes`;
  }
  if (schema.type !== undefined && !typeMatches(value, schema.type)) {
    return `${where}: expected ${typeof schema.type === 'string' ? schema.type : schema.type.join(' or ')}, got ${typeOf(value)}`;
  }
  if ('const' in schema && value !== schema.const) return `${where}: expected ${JSON.stringify(schema.const)}`;
  if (schema.enum && !schema.enum.includes(value)) {
    return `${where}: expected one of ${schema.enum.map((e) => JSON.stringify(e)).join(', ')}, got ${JSON.stringify(value)}`;
  }
  if (schema.minimum !== undefined && typeof value === 'number' && value < schema.minimum) {
    return `${where}: ${value} is below ${schema.minimum}`;
  }
  if (Array.isArray(value) && schema.items) {
    for (let i = 0; i < value.length; i++) {
      const problem = schemaProblem(value[i], schema.items, root, `${at}[${i}]`);
      if (problem) return problem;
    }
  }
  if (typeOf(value) === 'object') {
    const record = value as Record<string, unknown>;
    const prefix = at ? `${at}.` : '';
    for (const key of schema.required ?? []) {
      if (!(key in record)) return `${prefix}${key}: missing`;
    }
    for (const [key, item] of Object.entries(record)) {
      const declared = schema.properties?.[key];
      if (declared) {
        const problem = schemaProblem(item, declared, root, `${prefix}${key}`);
        if (problem) return problem;
      } else if (schema.additionalProperties === false) {
        return `${prefix}${key}: not part of the report schema`;
      } else if (typeof schema.additionalProperties === 'object') {
        const problem = schemaProblem(item, schema.additionalProperties, root, `${prefix}${key}`);
        if (problem) return problem;
      }
    }
  }
  return null;
}

/** Why `value` is not a report of this version, or null when it is one. */
export function reportProblem(value: unknown): string | null {
  return schemaProblem(value, REPORT_SCHEMA);
}
