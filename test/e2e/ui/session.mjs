// What the UI tests share: one code-server, one browser page on the workbench (run.mjs fills it in).
/**
 * @type {{
 *   server: Awaited<ReturnType<typeof import('../lib/server.mjs').startCodeServer>>,
 *   browser: import('playwright-core').Browser,
 *   page: import('playwright-core').Page,
 *   wb: import('../lib/workbench.mjs').Workbench,
 *   workspace: string,
 * }}
 */
export const session = /** @type {any} */ ({});
