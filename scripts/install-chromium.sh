#!/usr/bin/env bash
# Installs Debian's chromium for the end-to-end tests with real agent tools
# and the dashboard's browser test when it is missing. It does nothing when
# CHROMIUM names a browser already, or /usr/bin/chromium exists.
set -euo pipefail

if [[ -x ${CHROMIUM:-/usr/bin/chromium} ]]; then
	exit 0
fi
if ! command -v apt-get >/dev/null; then
	echo "$0: chromium is needed by the end-to-end tests: install it and set CHROMIUM to its path (or run go test ./... without -tags e2e)" >&2
	exit 1
fi
sudo=
if [[ $(id -u) -ne 0 ]]; then
	sudo=sudo
fi
echo "installing chromium (Debian package) for the end-to-end and dashboard tests" >&2
$sudo apt-get install -y -q chromium >/dev/null ||
	{ $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q chromium >/dev/null; }
