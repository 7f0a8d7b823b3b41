#!/usr/bin/env bash
# Installs redis-server from Debian's packages when the tests need one and it
# is missing. It does nothing when REDIS_URL names a server already or when
# redis-server is on PATH.
set -euo pipefail

if [[ -n ${REDIS_URL:-} ]] || command -v redis-server >/dev/null; then
	exit 0
fi
if ! command -v apt-get >/dev/null; then
	echo "$0: redis-server is needed by the tests: install it, or set REDIS_URL to a server" >&2
	exit 1
fi
sudo=
if [[ $(id -u) -ne 0 ]]; then
	sudo=sudo
fi
echo "installing redis-server (Debian package) for the tests" >&2
$sudo apt-get install -y -q redis-server >/dev/null ||
	{ $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q redis-server >/dev/null; }
