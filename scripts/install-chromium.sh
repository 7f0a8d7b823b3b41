#!/usr/bin/env bash
# Installs chromium from Debian's packages for the dashboard's browser test
# when it is missing. It does nothing when chromium is on PATH.
set -euo pipefail

if command -v chromium >/dev/null || [[ -x /usr/bin/chromium ]]; then
	exit 0
fi
if ! command -v apt-get >/dev/null; then
	echo "$0: the dashboard test needs chromium: install it (it is skipped without one)" >&2
	exit 0
fi
sudo=
if [[ $(id -u) -ne 0 ]]; then
	sudo=sudo
fi
echo "installing chromium (Debian package) for the tests" >&2
$sudo apt-get install -y -q chromium >/dev/null ||
	{ $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q chromium >/dev/null; }
