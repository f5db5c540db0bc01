#!/usr/bin/env bash
# Debian packages memhint's tests and demo need. Idempotent; skips apt when everything is present.
set -euo pipefail
# python3-dev: Python.h, for the harness's C line tracer (scripts/build-ctrace.sh).
PKGS=(python3-torch python3-dev libopenblas0-pthread chromium libkrb5-dev g++ make)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
