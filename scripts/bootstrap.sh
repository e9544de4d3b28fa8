#!/usr/bin/env bash
# Installs the workspace's npm dependencies when they are missing or stale.
# Needs only Node.js and npm: pnpm itself comes from the npm registry via npx.
set -euo pipefail
cd "$(dirname "$0")/.."
PNPM_VERSION=10.34.8
# puppeteer (pulled in by @memlab/core, a test-only dependency) must never try
# to download a browser; pnpm does not run its install script anyway
# (pnpm-workspace.yaml), this covers a package manager that would.
export PUPPETEER_SKIP_DOWNLOAD=true
marker=node_modules/.modules.yaml
if [ ! -f "$marker" ] || [ pnpm-lock.yaml -nt "$marker" ] || ! [ -e node_modules/.bin/tsx ]; then
  echo "heapcap: installing dependencies (pnpm $PNPM_VERSION)…" >&2
  if command -v pnpm >/dev/null 2>&1 && [ "$(pnpm --version 2>/dev/null)" = "$PNPM_VERSION" ]; then
    pnpm install --frozen-lockfile --reporter=silent
  else
    npx --yes "pnpm@$PNPM_VERSION" install --frozen-lockfile --reporter=silent
  fi
fi
