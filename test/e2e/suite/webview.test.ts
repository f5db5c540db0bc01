// The memory summary webview: opened by its command, it renders the report and says so (webview -> extension
// 'rendered' message); a new report reaches it (extension -> webview 'show') and it renders that one.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { ProfileCommandResult } from '../../../src/extension/profile/controller';
import type { ProfileReport } from '../../../src/profiler/report';
import { memhint, setSetting, testPython, waitFor, workspaceFile, workspaceRoot, type MemhintApi } from './util';

describe('memory summary webview', function () {
  this.timeout(180_000);
  let api: MemhintApi;
  let report: ProfileReport;
  const undo: (() => Promise<void>)[] = [];

  before(async () => {
    api = await memhint();
    undo.push(await setSetting('python', testPython), await setSetting('profile.backend', 'cpu'), await setSetting('profile.steps', 2));
    // A report of e2e_loop.py from an earlier suite is reused (from where the extension persisted it);
    // else this profiles it, CodeLens-style: file and function as arguments, no editor needed.
    const stored = api.state().report?.file;
    const previous = stored && fs.existsSync(stored) ? (JSON.parse(fs.readFileSync(stored, 'utf8')) as ProfileReport) : null;
    if (previous !== null && previous.target.script === workspaceFile('e2e_loop.py').fsPath && previous.lines.length > 1) {
      report = previous;
      await vscode.commands.executeCommand('memhint.openReport', vscode.Uri.file(stored!));
    } else {
      const outcome = await vscode.commands.executeCommand<ProfileCommandResult>('memhint.profileStep', workspaceFile('e2e_loop.py'), 'train_step');
      assert.equal(outcome.status, 'done', outcome.error);
      report = outcome.report!;
    }
  });

  after(async () => {
    MemorySummaryClose();
    for (const u of undo.reverse()) await u();
  });

  it('"memhint: Show Memory Summary" opens the panel, which renders the report and reports back', async () => {
    await vscode.commands.executeCommand('memhint.showSummary');
    const rendered = await waitFor('the webview to render', () => {
      const w = api.state().webview;
      return w.open && w.rendered !== null && w.rendered.rows > 0 ? w.rendered : false;
    }, 30_000);
    assert.ok(rendered.sections.includes('timeline'), `sections: ${rendered.sections.join(', ')}`);
    assert.ok(rendered.sections.includes('lines'), `sections: ${rendered.sections.join(', ')}`);
    assert.deepEqual(rendered.sort, { key: 'peak', descending: true });
    const userLines = new Set(report.lines.filter((l) => l.file.startsWith(workspaceRoot())).map((l) => `${l.file}:${l.line}`));
    assert.ok(rendered.rows <= report.lines.length && rendered.rows >= Math.min(1, userLines.size), `rows ${rendered.rows} for ${report.lines.length} report lines`);
    const tab = vscode.window.tabGroups.all.flatMap((g) => g.tabs).find((t) => t.label === 'memhint: Memory Summary');
    assert.ok(tab, 'a tab titled "memhint: Memory Summary"');
  });

  it('re-renders with a new report opened from disk (memhint: Open Profile Report…)', async () => {
    const before = api.state().webview.rendered!;
    // The same run with only its first line kept: the panel must show exactly one row afterwards.
    const first = report.lines.find((l) => l.file.startsWith(workspaceRoot()) && l.inclusive.allocated > 0)!;
    assert.ok(first, 'a line of the fixture allocated memory');
    const smaller: ProfileReport = { ...report, lines: [first] };
    const file = path.join(workspaceRoot(), 'one-line.memhint.json');
    fs.writeFileSync(file, JSON.stringify(smaller));
    assert.equal(await vscode.commands.executeCommand<boolean>('memhint.openReport', vscode.Uri.file(file)), true);
    const after = await waitFor('the webview to show the new report', () => {
      const r = api.state().webview.rendered;
      return r !== null && r !== before && r.rows === 1 ? r : false;
    }, 30_000);
    assert.equal(after.rows, 1);
    assert.equal(api.state().report?.lines, 1);
  });

  it('refuses a file that is not a memhint report, keeping the current one', async () => {
    const file = path.join(workspaceRoot(), 'not-a-report.json');
    fs.writeFileSync(file, JSON.stringify({ hello: 'world' }));
    assert.equal(await vscode.commands.executeCommand<boolean>('memhint.openReport', vscode.Uri.file(file)), false);
    assert.equal(api.state().report?.lines, 1);
  });

  it('puts a prediction of the same step beside the measured report, and none of another step', async () => {
    // Opens a report and returns what the panel drew last once it settled (a render of the report
    // opened before may still be on its way when the next one opens).
    const sectionsAfter = async (file: string): Promise<readonly string[]> => {
      const before = api.state().webview.rendered;
      assert.equal(await vscode.commands.executeCommand<boolean>('memhint.openReport', vscode.Uri.file(file)), true);
      await waitFor('the webview to render the opened report', () => api.state().webview.rendered !== before, 30_000);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      return api.state().webview.rendered!.sections;
    };
    const measured = path.join(workspaceRoot(), 'measured.memhint.json');
    fs.writeFileSync(measured, JSON.stringify(report));
    assert.ok(!(await sectionsAfter(measured)).includes('compare'), 'a measured report alone');
    const predicted = (target: ProfileReport['target']): string => {
      const file = path.join(workspaceRoot(), `predicted-${target.function}.memhint.json`);
      const prediction = {
        allocator: { allocatedBytes: 0, reservedBytes: 0, maxAllocatedBytes: 4 << 20, maxReservedBytes: 8 << 20, requestedBytes: 0, segments: 1, allocRetries: 0, ooms: 0, model: 'native', maxSplitSize: null },
        rawPeakBytes: 3 << 20, deviceMemoryBytes: null, fits: null, firstExceeded: null, amp: null, checkpoint: null, setupArgs: {}, seconds: 0.1,
      };
      fs.writeFileSync(file, JSON.stringify({ ...report, target, mode: 'predicted', prediction, modules: report.modules ?? [] }));
      return file;
    };
    assert.ok((await sectionsAfter(predicted(report.target))).includes('compare'), 'a prediction of train_step beside its measurement');
    assert.ok(!(await sectionsAfter(predicted({ ...report.target, function: 'evaluate' }))).includes('compare'), 'another step: nothing to compare');
    // Leave the measured report loaded, as the suites after this one expect.
    assert.ok(!(await sectionsAfter(measured)).includes('compare'), 'the last prediction is of another step');
  });
});

function MemorySummaryClose(): void {
  const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => t.label === 'memhint: Memory Summary');
  void vscode.window.tabGroups.close(tabs);
}
