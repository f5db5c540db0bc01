// The per-module breakdown (report.modules) as tree rows for the summary. Pure; no `vscode` here.
import { moduleFigures, type ModuleStats } from '../../profiler/report';
import type { ModuleRow } from './messages';

/**
 * The module tree as rows: ids made unique across root models, each row's parent the nearest listed
 * ancestor (a module that never ran is not listed, its children hang under the next one up).
 */
export function moduleRows(modules: readonly ModuleStats[]): ModuleRow[] {
  const ids = new Set<string>();
  const rows: ModuleRow[] = [];
  for (const m of modules) {
    const id = m.path === '' ? m.root : `${m.root}/${m.path}`;
    if (ids.has(id)) continue;
    let parent: string | null = null;
    if (m.path !== '') {
      const parts = m.path.split('.');
      for (let k = parts.length - 1; k >= 0 && parent === null; k--) {
        const candidate = k === 0 ? m.root : `${m.root}/${parts.slice(0, k).join('.')}`;
        if (ids.has(candidate)) parent = candidate;
      }
    }
    const depth = parent === null ? 0 : (rows.find((r) => r.id === parent)?.depth ?? 0) + 1;
    ids.add(id);
    rows.push({
      id,
      parent,
      depth,
      name: m.path === '' ? m.root : m.path.slice(m.path.lastIndexOf('.') + 1),
      type: m.type,
      // The harness already divides these by the profiled steps.
      ...moduleFigures(m),
    });
  }
  return rows;
}
