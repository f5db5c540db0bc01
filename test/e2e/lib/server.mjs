// Starts code-server (a real VS Code 1.139 served over HTTP) on 127.0.0.1 with a free port and throwaway
// state: its own user-data, extensions, config, HOME and XDG dirs, so runs never see each other or the
// developer's setup. The server runs on the Node 24 that setup-e2e.sh installs (code-server demands it).
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { codeServerEntry, node24, repoRoot, testPython } from './paths.mjs';

/** Settings that keep VS Code quiet and offline-friendly; tests may add their own on top. */
export const quietSettings = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.welcomePage.walkthroughs.openOnInstall': false,
  'workbench.enableExperiments': false,
  'workbench.secondarySideBar.defaultVisibility': 'hidden',
  'chat.disableAIFeatures': true,
  'chat.commandCenter.enabled': false,
  'telemetry.telemetryLevel': 'off',
  'extensions.autoUpdate': false,
  'extensions.autoCheckUpdates': false,
  'extensions.ignoreRecommendations': true,
  'update.mode': 'none',
  'update.showReleaseNotes': false,
  'git.enabled': false,
  'security.workspace.trust.startupPrompt': 'never',
  'security.workspace.trust.banner': 'never',
  'window.confirmBeforeClose': 'never',
  'files.hotExit': 'off',
  'files.autoSave': 'off',
  'workbench.colorTheme': 'Default Dark Modern',
  'memhint.python': testPython,
};

export function assertInstalled() {
  for (const file of [node24, codeServerEntry]) {
    if (!fs.existsSync(file)) {
      throw new Error(`e2e tools missing (${path.relative(repoRoot, file)}): run bash scripts/setup-e2e.sh`);
    }
  }
}

export async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {net.AddressInfo} */ (srv.address());
      srv.close(() => resolve(port));
    });
  });
}

/**
 * @param {object} opts
 * @param {string} opts.stateDir  empty folder for this server's state
 * @param {boolean} [opts.trust]  false: keep workspace trust on (untrusted-workspace tests)
 * @param {Record<string, unknown>} [opts.settings]  user settings on top of quietSettings
 * @param {Record<string, string>} [opts.env]  extra environment (inherited by the extension host)
 * @param {string[]} [opts.extensions]  extension folders to install (linked into the extensions dir),
 *   as a user's installed extensions: the payload's development mode needs the smoke-test driver
 * @param {boolean} [opts.smokeTestDriver]  VS Code's smoke-test driver: reports extension tests' exit
 *   code to the page (codeAutomationExit), but also hides notification toasts, so UI runs turn it off
 */
export async function startCodeServer({ stateDir, trust = true, settings = {}, env = {}, extensions = [], smokeTestDriver = true }) {
  assertInstalled();
  const port = await freePort();
  const dirs = {
    userData: path.join(stateDir, 'user-data'),
    extensions: path.join(stateDir, 'extensions'),
    home: path.join(stateDir, 'home'),
  };
  for (const d of Object.values(dirs)) fs.mkdirSync(d, { recursive: true });
  for (const dir of extensions) {
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
    fs.symlinkSync(dir, path.join(dirs.extensions, `${manifest.publisher}.${manifest.name}-${manifest.version}`));
  }
  const settingsFile = path.join(dirs.userData, 'User', 'settings.json');
  fs.mkdirSync(path.dirname(settingsFile), { recursive: true });
  fs.writeFileSync(settingsFile, JSON.stringify({ ...quietSettings, ...settings }, null, 2));
  const config = path.join(stateDir, 'config.yaml');
  fs.writeFileSync(config, `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`);

  const args = [
    codeServerEntry,
    '--bind-addr', `127.0.0.1:${port}`,
    '--auth', 'none',
    '--disable-telemetry',
    '--disable-update-check',
    '--disable-getting-started-override',
    '--user-data-dir', dirs.userData,
    '--extensions-dir', dirs.extensions,
    '--config', config,
    '--ignore-last-opened',
  ];
  if (smokeTestDriver) args.push('--vscode-option', 'enable-smoke-test-driver');
  if (trust) args.push('--disable-workspace-trust');

  // A clean environment: no VSCODE_* from a developer's terminal, HOME/XDG inside stateDir.
  const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('VSCODE_')));
  const serverEnv = {
    ...baseEnv,
    HOME: dirs.home,
    XDG_CONFIG_HOME: path.join(dirs.home, '.config'),
    XDG_DATA_HOME: path.join(dirs.home, '.local/share'),
    XDG_CACHE_HOME: path.join(dirs.home, '.cache'),
    XDG_RUNTIME_DIR: path.join(dirs.home, '.runtime'),
    MEMHINT_TEST_PYTHON: testPython,
    ...env,
  };
  fs.mkdirSync(serverEnv.XDG_RUNTIME_DIR, { recursive: true, mode: 0o700 });

  const logFile = path.join(stateDir, 'code-server.log');
  const logFd = fs.openSync(logFile, 'a');
  // detached: its own process group, so stop() also ends the extension host and anything it spawned.
  const child = spawn(node24, args, { cwd: stateDir, env: serverEnv, detached: true, stdio: ['ignore', logFd, logFd] });
  fs.closeSync(logFd);
  liveGroups.add(child.pid);
  let exited = false;
  const exitPromise = new Promise((resolve) => child.on('exit', (code, signal) => {
    exited = true;
    resolve({ code, signal });
  }));

  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited) throw new Error(`code-server exited at start-up; log: ${logFile}\n${tail(logFile)}`);
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) break;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) {
      stopGroup(child.pid);
      throw new Error(`code-server did not answer within 60 s; log: ${logFile}\n${tail(logFile)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }

  return {
    port,
    url,
    logFile,
    settingsFile,
    dirs,
    /** A vscode-remote URI for an absolute path on this server (what the payload needs). */
    remoteUri: (absPath) => `vscode-remote://127.0.0.1:${port}${absPath}`,
    /** The workbench URL for a folder, with an optional dev-mode payload. */
    workbenchUrl(folder, payload) {
      const q = new URLSearchParams({ folder });
      if (payload) q.set('payload', JSON.stringify(payload));
      return `${url}/?${q.toString()}`;
    },
    log: () => fs.readFileSync(logFile, 'utf8'),
    async stop() {
      if (exited) return;
      stopGroup(child.pid, 'SIGTERM');
      const timer = setTimeout(() => stopGroup(child.pid, 'SIGKILL'), 3000);
      await exitPromise;
      clearTimeout(timer);
      stopGroup(child.pid, 'SIGKILL'); // leftovers of the group (extension host children)
      liveGroups.delete(child.pid);
    },
  };
}

// Servers still running when this process ends (a crash, Ctrl+C) are killed with their whole group.
const liveGroups = new Set();
process.on('exit', () => { for (const pid of liveGroups) stopGroup(pid); });
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    for (const pid of liveGroups) stopGroup(pid);
    process.exit(130);
  });
}

function stopGroup(pid, signal = 'SIGKILL') {
  try { process.kill(-pid, signal); } catch { /* already gone */ }
}

export function tail(file, lines = 40) {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}
