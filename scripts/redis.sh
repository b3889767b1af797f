#!/usr/bin/env bash
# redis.sh makes sure a Redis server is reachable for rota's tests and prints its URL.
#
#   url=$(scripts/redis.sh)             # reuse or start a server, print its URL
#   export ROTA_TEST_REDIS_URL="$url"
#   scripts/redis.sh stop DIR           # stop a server this script started, delete DIR
#
# 1. If a server on 127.0.0.1:$ROTA_REDIS_PORT (default 6379) answers PING, it is used. The
#    tests never flush it: each works in a namespace of its own and deletes only its own keys.
# 2. Otherwise the script starts a throwaway redis-server without persistence (--save "",
#    --appendonly no) in a temporary directory, on 127.0.0.1 at the first free port from
#    $ROTA_REDIS_PORT up, installing Debian's redis-server with apt-get when it is missing (as
#    root).
#
# The URL goes to stdout, everything else to stderr. The script exits non-zero, saying why, when
# it cannot provide a server.
#
# Environment: ROTA_REDIS_PORT (port to try first), ROTA_REDIS_DIR (directory for a new server;
# default: a new temporary directory).
set -euo pipefail

log() { echo "redis.sh: $*" >&2; }
die() {
	log "error: $*"
	exit 1
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

url_for() { echo "redis://127.0.0.1:$1/0"; }

# answers reports whether a Redis on port $1 answers PING, with redis-cli or, without it, by
# speaking the protocol over bash's /dev/tcp.
answers() {
	local port=$1
	if command -v redis-cli >/dev/null 2>&1; then
		[[ $(timeout 5 redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null) == PONG ]]
		return
	fi
	local reply
	reply=$(timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port && printf 'PING\r\n' >&3 && head -c 5 <&3" 2>/dev/null || true)
	[[ "$reply" == "+PONG" ]]
}

stop() {
	local dir=${1:?usage: redis.sh stop DIR}
	[[ -f "$dir/redis.pid" ]] || die "$dir holds no server started by this script"
	local pid
	pid=$(cat "$dir/redis.pid")
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	rm -rf "$dir"
	log "stopped and removed $dir"
}

main() {
	local port=${ROTA_REDIS_PORT:-6379}

	# 1. A server that already runs.
	if port_in_use "$port"; then
		if answers "$port"; then
			log "using the server on 127.0.0.1:$port"
			url_for "$port"
			return
		fi
		log "127.0.0.1:$port is taken by something that does not answer PING; starting a server"
	fi

	# 2. The binary.
	if ! command -v redis-server >/dev/null 2>&1; then
		[[ $(id -u) -eq 0 ]] || die "redis-server is not installed and installing it needs root (apt-get install redis-server)"
		command -v apt-get >/dev/null 2>&1 || die "redis-server is not installed and apt-get is not available"
		log "installing redis-server with apt-get"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update >&2 || die "apt-get update failed"
		apt-get install -y --no-install-recommends redis-server >&2 || die "apt-get install redis-server failed"
		command -v redis-server >/dev/null 2>&1 || die "redis-server installed, but it is nowhere to be found"
	fi

	# 3. A throwaway server on a free port.
	while port_in_use "$port"; do
		port=$((port + 1))
		((port < 65535)) || die "no free port"
	done
	local dir=${ROTA_REDIS_DIR:-}
	if [[ -z "$dir" ]]; then
		dir=$(mktemp -d "${TMPDIR:-/tmp}/rota-redis.XXXXXX") || die "cannot make a temporary directory"
	fi
	mkdir -p "$dir" || die "cannot create $dir"
	log "starting redis-server on 127.0.0.1:$port in $dir"
	redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
		--daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" >&2 ||
		die "redis-server did not start: $(tail -n 5 "$dir/redis.log" 2>/dev/null)"
	for _ in $(seq 100); do
		answers "$port" && break
		sleep 0.1
	done
	answers "$port" || die "the server on port $port started but does not answer: $(tail -n 5 "$dir/redis.log" 2>/dev/null)"
	log "stop it with: $0 stop $dir"
	url_for "$port"
}

if [[ "${1:-}" == stop ]]; then
	stop "${2:-}"
else
	main
fi
