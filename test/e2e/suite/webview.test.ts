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
});

function MemorySummaryClose(): void {
  const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => t.label === 'memhint: Memory Summary');
  void vscode.window.tabGroups.close(tabs);
}
