// Probe entry point (minimal, to prove the e2e test infrastructure); the extension's features replace it.
import * as vscode from 'vscode';

let log: vscode.LogOutputChannel | undefined;

export function activate(context: vscode.ExtensionContext): void {
  log = vscode.window.createOutputChannel('memhint', { log: true });
  context.subscriptions.push(
    log,
    vscode.commands.registerCommand('memhint.showLogs', () => log?.show(true)),
  );
  log.info('memhint activated');
}

export function deactivate(): void {
  log = undefined;
}
