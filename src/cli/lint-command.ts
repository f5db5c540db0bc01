// `memhint lint [options] PATH...`: exit 0 clean, 1 findings, 2 usage or I/O errors.
import * as fs from 'node:fs';
import { parseArgs } from 'node:util';
import { Linter, parseTorchVersion, unknownRuleSelectors, type Finding, type LintSettings } from '../lint';
import { ConfigError, emptyConfig, findProjectConfig, isExcluded, settingsForFile, type Overrides } from '../lint/config';
import { fixUntilStable } from '../lint/fix';
import { collectPythonFiles, readSource } from './files';
import { formatText, toJson, toSarif, type FileFindings } from './report';
import { UsageError } from './usage';

export const LINT_HELP = `Usage: memhint lint [options] PATH...

Lints Python files (directories are walked for .py files) for PyTorch memory waste.

Options:
  --format text|json|sarif   output format (default: text)
  --fix                      apply safe fixes in place, then report what is left
  --select CODES             comma-separated codes, prefixes or names to check (default: all)
  --ignore CODES             comma-separated codes, prefixes or names to skip
  --target-torch VERSION     the torch version the code runs on (e.g. 1.13, 2.4)
  --no-config                do not read [tool.memhint] from pyproject.toml
  --output FILE              write the report to FILE instead of stdout
  -h, --help                 show this help
`;

const splitCodes = (v: string | undefined): string[] | undefined =>
  v === undefined ? undefined : v.split(',').map((s) => s.trim()).filter((s) => s !== '');

export async function runLintCommand(argv: readonly string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        format: { type: 'string', default: 'text' },
        fix: { type: 'boolean', default: false },
        select: { type: 'string' },
        ignore: { type: 'string' },
        'target-torch': { type: 'string' },
        'no-config': { type: 'boolean', default: false },
        output: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(LINT_HELP);
    return 0;
  }
  const format = values.format;
  if (format !== 'text' && format !== 'json' && format !== 'sarif') throw new UsageError(`--format must be text, json or sarif (got "${format}")`);
  if (positionals.length === 0) throw new UsageError('no paths given (try: memhint lint .)');
  const overrides: { -readonly [K in keyof Overrides]: Overrides[K] } = {};
  const select = splitCodes(values.select);
  const ignore = splitCodes(values.ignore);
  if (select !== undefined) overrides.select = select;
  if (ignore !== undefined) overrides.ignore = ignore;
  const unknown = unknownRuleSelectors([...(select ?? []), ...(ignore ?? [])]);
  if (unknown.length > 0) throw new UsageError(`unknown rule code or name: ${unknown.join(', ')}`);
  if (values['target-torch'] !== undefined) {
    const v = parseTorchVersion(values['target-torch']);
    if (v === null) throw new UsageError(`--target-torch must be a version such as 2.1 (got "${values['target-torch']}")`);
    overrides.targetTorch = v;
  }

  const linter = await Linter.create();
  const { files, errors } = collectPythonFiles(positionals);
  const results: FileFindings[] = [];
  let ioErrors = errors.length;
  for (const e of errors) process.stderr.write(`memhint: ${e}\n`);

  for (const filename of files) {
    const hooks = {
      onRuleError: (rule: { code: string }, err: unknown): void => {
        process.stderr.write(`memhint: ${filename}: internal error in ${rule.code}: ${err instanceof Error ? err.message : String(err)}\n`);
        ioErrors++;
      },
    };
    let settings: LintSettings;
    try {
      const config = values['no-config'] ? emptyConfig : findProjectConfig(filename);
      if (isExcluded(config, filename) && !positionals.includes(filename)) continue;
      settings = settingsForFile(config, filename, overrides);
    } catch (err) {
      if (err instanceof ConfigError) throw new UsageError(err.message);
      throw err;
    }
    let source;
    try {
      source = readSource(filename);
    } catch (err) {
      process.stderr.write(`memhint: ${filename}: ${err instanceof Error ? err.message : String(err)}\n`);
      ioErrors++;
      continue;
    }
    let text = source.text;
    if (values.fix) {
      const fixed = fixUntilStable(text, (t) => linter.lintText(t, settings, hooks));
      if (fixed.applied > 0) {
        try {
          fs.writeFileSync(filename, (source.bom ? '\ufeff' : '') + fixed.text);
          text = fixed.text;
        } catch (err) {
          process.stderr.write(`memhint: ${filename}: cannot write fixes: ${err instanceof Error ? err.message : String(err)}\n`);
          ioErrors++;
        }
      }
    }
    const findings: Finding[] = linter.lintText(text, settings, hooks);
    results.push({ filename, text, findings });
  }

  const out =
    format === 'json'
      ? JSON.stringify(toJson(results), null, 2) + '\n'
      : format === 'sarif'
        ? JSON.stringify(toSarif(results, process.cwd()), null, 2) + '\n'
        : formatText(results, values.output === undefined && process.stdout.isTTY === true);
  if (values.output !== undefined) {
    try {
      fs.writeFileSync(values.output, out);
    } catch (err) {
      process.stderr.write(`memhint: cannot write ${values.output}: ${err instanceof Error ? err.message : String(err)}\n`);
      return 2;
    }
  } else {
    process.stdout.write(out);
  }
  if (ioErrors > 0) return 2;
  return results.some((r) => r.findings.length > 0) ? 1 : 0;
}
