// The extension's one log: a LogOutputChannel named "memhint" ("memhint: Show Logs" reveals it).
import * as vscode from 'vscode';

export class Logger implements vscode.Disposable {
  readonly channel: vscode.LogOutputChannel;

  constructor() {
    this.channel = vscode.window.createOutputChannel('memhint', { log: true });
  }

  info(message: string): void {
    this.channel.info(message);
  }

  warn(message: string): void {
    this.channel.warn(message);
  }

  debug(message: string): void {
    this.channel.debug(message);
  }

  error(message: string, err?: unknown): void {
    if (err === undefined) this.channel.error(message);
    else this.channel.error(`${message}: ${errorText(err)}`);
  }

  show(): void {
    this.channel.show(true);
  }

  dispose(): void {
    this.channel.dispose();
  }
}

export function errorText(err: unknown): string {
  if (err instanceof Error) return err.stack ?? err.message;
  return String(err);
}
