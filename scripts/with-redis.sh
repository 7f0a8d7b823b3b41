#!/usr/bin/env bash
# Usage: scripts/with-redis.sh CMD [ARG]...
#
# Runs CMD with REDIS_URL pointing at a Redis server and exits with CMD's
# status. When REDIS_URL is already set (CI service, developer's own server)
# that server is used as is; otherwise a throwaway redis-server is started on
# a free loopback port, without persistence, and stopped when CMD ends.
set -euo pipefail

if [[ $# -eq 0 ]]; then
	echo "usage: $0 CMD [ARG]..." >&2
	exit 2
fi
if [[ -n ${REDIS_URL:-} ]]; then
	exec "$@"
fi
if ! command -v redis-server >/dev/null; then
	echo "$0: redis-server not found on PATH: install it (e.g. apt-get install redis-server) or set REDIS_URL" >&2
	exit 127
fi

dir=$(mktemp -d)
pid=
cleanup() {
	if [[ -n $pid ]]; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# answers PORT succeeds when a Redis server answers PING on PORT.
answers() {
	local reply=
	exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
	printf 'PING\r\n' >&3
	IFS= read -r -t 1 reply <&3 || true
	exec 3>&-
	[[ $reply == +PONG* ]]
}

# start PORT launches redis-server on PORT and waits until it answers; it
# fails when the server exits first, e.g. because the port was taken.
start() {
	redis-server --port "$1" --bind 127.0.0.1 --save '' --appendonly no \
		--dir "$dir" --logfile "$dir/redis.log" &
	pid=$!
	local deadline=$((SECONDS + 10))
	while ((SECONDS < deadline)); do
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid" 2>/dev/null || true
			pid=
			return 1
		fi
		if answers "$1" 2>/dev/null; then
			return 0
		fi
		sleep 0.05
	done
	echo "$0: redis-server on port $1 did not answer PING within 10s" >&2
	cat "$dir/redis.log" >&2 || true
	exit 1
}

port=
for _ in 1 2 3 4 5 6 7 8 9 10; do
	candidate=$((20000 + RANDOM % 30000))
	# A port something already listens on is not free.
	if (exec 3<>"/dev/tcp/127.0.0.1/$candidate") 2>/dev/null; then
		continue
	fi
	if start "$candidate"; then
		port=$candidate
		break
	fi
done
if [[ -z $port ]]; then
	echo "$0: could not start redis-server on a free port" >&2
	cat "$dir/redis.log" >&2 || true
	exit 1
fi

export REDIS_URL="redis://127.0.0.1:$port/0"
status=0
"$@" || status=$?
exit "$status"
