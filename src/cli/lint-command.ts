// `memhint lint [options] PATH...`: exit 0 clean, 1 findings, 2 usage or I/O errors.
import { parseArgs } from 'node:util';
import { Linter, parseTorchVersion, ProjectIndex, unknownRuleSelectors, type LintSettings } from '../lint';
import { ConfigError, emptyConfig, findProjectConfig, isExcluded, parseSize, ProjectConfigCache, settingsForFile, type Overrides, type ProjectConfig } from '../lint/config';
import { removeStaleOutput, writeFileAtomic } from './atomic-write';
import { collectPythonFiles } from './files';
import { DEFAULT_MAX_FILE_SIZE, FixTargets, lintOneFile } from './lint-file';
import { lintInParallel, workerCount, type LintJob } from './lint-pool';
import { lintJob } from './lint-worker';
import { formatText, toJson, toSarif, type FileFindings } from './report';
import { UsageError } from './usage';
import { findTorchPin, TorchPinCache } from '../lint/torch-pin';
import { formatTorchVersion } from '../lint/types';

export const LINT_HELP = `Usage: memhint lint [options] PATH...

Lints Python files (directories are walked for .py files) for PyTorch memory waste.

--fix writes a file only when it parses, still holds what was read, and is not a symlink
to outside the paths given; the write is atomic. Exit 2 when any file was not checked or not fixed.

Options:
  --format text|json|sarif   output format (default: text)
  --fix                      apply safe fixes in place, then report what is left
  --select CODES             comma-separated codes, prefixes or names to check (default: all)
  --ignore CODES             comma-separated codes, prefixes or names to skip
  --target-torch VERSION     the torch version the code runs on (e.g. 1.13, 2.4); else
                             [tool.memhint] target-torch, else the oldest torch that a pin in
                             requirements*.txt / pyproject.toml / setup.cfg / environment.yml
                             above the file allows, else a current torch 2.x
  --no-config                do not read [tool.memhint] from pyproject.toml
  --max-file-size SIZE       skip larger files (default 10MiB; e.g. 500KiB, 64MiB; 0: no limit)
  --output FILE              write the report to FILE instead of stdout (replaced atomically;
                             a previous report there is removed when the run starts)
  -h, --help                 show this help
`;

const splitCodes = (v: string | undefined): string[] | undefined =>
  v === undefined ? undefined : v.split(',').map((s) => s.trim()).filter((s) => s !== '');

const createDefaultLinter = (): Promise<Linter> => Linter.create();

/**
 * `createLinter` is a seam for tests that need a linter failing or racing on one file (such a run
 * stays on one thread: worker threads would create their own linters).
 */
export async function runLintCommand(argv: readonly string[], createLinter: () => Promise<Linter> = createDefaultLinter): Promise<number> {
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
        'max-file-size': { type: 'string' },
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
  if (select !== undefined && select.length === 0) throw new UsageError('--select names no rule, so none would run (leave it out to check every rule)');
  if (select !== undefined) overrides.select = select;
  if (ignore !== undefined) overrides.ignore = ignore;
  const unknown = unknownRuleSelectors([...(select ?? []), ...(ignore ?? [])]);
  if (unknown.length > 0) throw new UsageError(`unknown rule code or name: ${unknown.join(', ')}`);
  if (values['target-torch'] !== undefined) {
    const v = parseTorchVersion(values['target-torch']);
    if (v === null) throw new UsageError(`--target-torch must be a version such as 2.1 (got "${values['target-torch']}")`);
    overrides.targetTorch = v;
  }

  let maxFileSize: number | null = null;
  if (values['max-file-size'] !== undefined) {
    maxFileSize = parseSize(values['max-file-size']);
    if (maxFileSize === null) throw new UsageError(`--max-file-size must be a size such as 16MiB, 500KiB or a number of bytes (got "${values['max-file-size']}")`);
  }
  // A failed or killed run must not leave the previous report looking like this run's.
  if (values.output !== undefined) {
    try {
      removeStaleOutput(values.output);
    } catch (err) {
      throw new UsageError(err instanceof Error ? err.message : String(err));
    }
  }

  const linter = await createLinter();
  /** pyproject.toml files parsed once per run, not once per file. */
  const configs = new ProjectConfigCache();
  const pins = new TorchPinCache();
  /** Which target torch was used, and where it came from -> number of files (said in the text output). */
  const targets = new Map<string, number>();
  const { files, errors } = collectPythonFiles(positionals);
  const results: FileFindings[] = [];
  let ioErrors = errors.length;
  const reported = new Set<string>();
  const warn = (message: string): void => {
    if (reported.has(message)) return;
    reported.add(message);
    process.stderr.write(`memhint: ${message}\n`);
    ioErrors++;
  };
  for (const e of errors) process.stderr.write(`memhint: ${e}\n`);
  const fixer = values.fix ? new FixTargets(positionals) : null;
  // Modules the linted files import, read from disk when a rule follows an import (this thread's; each
  // worker has its own). Sibling files of a single file argument are found the same way.
  const project = new ProjectIndex(linter.parser, { maxFileSize: maxFileSize ?? DEFAULT_MAX_FILE_SIZE, oneShot: true });

  const jobs: LintJob[] = [];
  for (const filename of files) {
    let settings: LintSettings;
    let config: ProjectConfig;
    try {
      config = values['no-config'] ? emptyConfig : findProjectConfig(filename, warn, configs);
      if (isExcluded(config, filename) && !positionals.includes(filename)) continue;
      settings = settingsForFile(config, filename, overrides);
      let source: string;
      if (overrides.targetTorch !== undefined && overrides.targetTorch !== null) source = `${formatTorchVersion(overrides.targetTorch)} (--target-torch)`;
      else if (settings.targetTorch !== null) source = `${formatTorchVersion(settings.targetTorch)} ([tool.memhint] target-torch in ${config.path ?? 'pyproject.toml'})`;
      else {
        const pin = findTorchPin(filename, pins);
        if (pin !== null) settings = { ...settings, targetTorch: pin.version };
        source = pin === null ? 'a current torch 2.x (default; no --target-torch, target-torch setting or torch pin found)' : `${formatTorchVersion(pin.version)} (\`${pin.spec}\` in ${pin.file})`;
      }
      targets.set(source, (targets.get(source) ?? 0) + 1);
    } catch (err) {
      if (err instanceof ConfigError) throw new UsageError(err.message);
      throw err;
    }
    const size = maxFileSize ?? config.maxFileSize ?? DEFAULT_MAX_FILE_SIZE;
    if (fixer !== null) {
      // One file's failure (a parser or rule bug, a stack overflow on deep nesting) must not
      // lose the findings of the others: report it on one line and go on.
      try {
        const result = lintOneFile(linter, filename, settings, size, fixer, warn, project);
        if (result !== null) results.push(result);
      } catch (err) {
        warn(`${filename}: internal error: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`);
      }
    } else jobs.push({ index: jobs.length, filename, settings, maxFileSize: size });
  }
  // Without --fix, files are independent: many of them are linted on several threads (lint-pool.ts),
  // the same findings and messages in the same order as on one.
  const workers = createLinter === createDefaultLinter ? workerCount(jobs.length) : 0;
  const done = workers > 0 ? await lintInParallel(jobs, workers, (job) => lintJob(linter, job, project)) : jobs.map((job) => lintJob(linter, job, project));
  for (const { result, warnings } of done) {
    for (const w of warnings) warn(w);
    if (result !== null) results.push(result);
  }

  const out =
    format === 'json'
      ? JSON.stringify(toJson(results), null, 2) + '\n'
      : format === 'sarif'
        ? JSON.stringify(toSarif(results, process.cwd()), null, 2) + '\n'
        : formatText(results, values.output === undefined && process.stdout.isTTY === true, ioErrors) +
          [...targets].map(([source, n]) => `Target torch: ${source}${targets.size > 1 ? ` for ${n} file${n === 1 ? '' : 's'}` : ''}.\n`).join('');
  if (values.output !== undefined) {
    try {
      writeFileAtomic(values.output, out);
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
