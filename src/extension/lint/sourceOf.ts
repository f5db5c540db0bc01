// The parsed syntax of a document: the diagnostics' incremental parse when it is current, else a
// one-off parse (the SourceFile mirror stays valid after its tree is freed).
import type * as vscode from 'vscode';
import type { Linter, SourceFile } from '../../lint';
import type { DiagnosticsController } from './diagnostics';

export function sourceOf(document: vscode.TextDocument, diagnostics: DiagnosticsController, linter: Linter): SourceFile {
  const result = diagnostics.result(document.uri);
  if (result !== null && result.version === document.version) return result.source;
  return parseOnce(linter, document.getText());
}

/** A one-off parse of a text (a notebook's program): the mirror outlives the freed tree. */
export function parseOnce(linter: Linter, text: string): SourceFile {
  const doc = linter.open(text);
  try {
    return doc.source;
  } finally {
    doc.dispose();
  }
}
