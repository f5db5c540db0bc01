// CLI entry: `memhint <command> [options]`. bin/memhint.js calls main() from the bundle.
import { LINT_HELP, runLintCommand } from './lint-command';
import { PREDICT_USAGE, runPredictCommand } from './predict-command';
import { PROFILE_USAGE, runProfileCommand } from './profile-command';
import { UsageError } from './usage';
import { version } from '../../package.json';

const HELP = `memhint ${version}: PyTorch memory linter and step profiler

Usage:
  memhint lint [options] PATH...          lint Python files (memhint lint --help)
  memhint profile FILE.py[::STEP] [opts]  profile a training step's memory per line (memhint profile --help)
  memhint predict FILE.py::STEP --setup F predict its CUDA memory without a GPU (memhint predict --help)
  memhint rules                           list the rules
  memhint --version

Exit codes: 0 clean, 1 findings, 2 usage or I/O error.
`;

export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'lint':
        return await runLintCommand(rest);
      case 'profile':
        return await runProfileCommand([...rest]);
      case 'predict':
        return await runPredictCommand([...rest]);
      case 'rules':
        return await printRules();
      case '--version':
      case '-V':
        process.stdout.write(`${version}\n`);
        return 0;
      case undefined:
      case '-h':
      case '--help':
      case 'help':
        process.stdout.write(
          rest[0] === 'lint' ? LINT_HELP : rest[0] === 'profile' ? PROFILE_USAGE : rest[0] === 'predict' ? PREDICT_USAGE : HELP,
        );
        return 0;
      default:
        throw new UsageError(`unknown command "${command}" (try: memhint --help)`);
    }
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`memhint: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
}

async function printRules(): Promise<number> {
  const { allRules } = await import('../lint/rules');
  for (const r of allRules) process.stdout.write(`${r.code}  ${r.name.padEnd(22)} ${r.severity.padEnd(8)} ${r.summary}\n`);
  return 0;
}
