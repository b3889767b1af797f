#!/usr/bin/env bash
# postgres.sh makes sure a PostgreSQL server is reachable for rota's tests and prints its URL.
#
#   url=$(scripts/postgres.sh)             # reuse or start a server, print its URL
#   export ROTA_TEST_POSTGRES_URL="$url"
#   scripts/postgres.sh stop DIR           # stop a server this script started, delete DIR
#
# 1. If a server on 127.0.0.1:$ROTA_PG_PORT (default 5432) accepts user postgres without a
#    password, it is used: the database "test" is created if missing, and its URL printed.
# 2. Otherwise the script starts a throwaway server: it installs PostgreSQL with apt-get when the
#    binaries are missing (Debian, as root), runs initdb in a temporary directory (as the user
#    postgres when run as root: the server refuses to run as root) with trust authentication,
#    and starts it on 127.0.0.1 at the first free port from $ROTA_PG_PORT up.
#
# The URL goes to stdout, everything else to stderr. The script exits non-zero, saying why, when
# it cannot provide a server.
#
# Environment: ROTA_PG_PORT (port to try first), ROTA_PG_DIR (directory for a new server;
# default: a new temporary directory), ROTA_PG_BIN (directory of initdb, pg_ctl, psql).
set -euo pipefail

log() { echo "postgres.sh: $*" >&2; }
die() {
	log "error: $*"
	exit 1
}

# bindir finds the server binaries: ROTA_PG_BIN, the newest Debian install, or the PATH.
bindir() {
	if [[ -n "${ROTA_PG_BIN:-}" ]]; then
		[[ -x "$ROTA_PG_BIN/initdb" ]] || die "ROTA_PG_BIN=$ROTA_PG_BIN holds no initdb"
		echo "$ROTA_PG_BIN"
		return
	fi
	local newest
	newest=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
	if [[ -n "$newest" && -x "$newest/initdb" ]]; then
		echo "$newest"
		return
	fi
	if command -v initdb >/dev/null 2>&1; then
		dirname "$(command -v initdb)"
	fi
}

# as_server_user runs a command as the user that owns the server: postgres when we are root.
as_server_user() {
	if [[ $(id -u) -ne 0 ]]; then
		"$@"
	elif command -v runuser >/dev/null 2>&1; then
		runuser -u postgres -- "$@"
	else
		su postgres -s /bin/sh -c "$(printf '%q ' "$@")"
	fi
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

url_for() { echo "postgres://postgres@127.0.0.1:$1/test?sslmode=disable"; }

# usable reports whether the server on port $1 lets user postgres in without a password, and
# makes sure it has the database test.
usable() {
	local port=$1 psql=$2
	PGCONNECT_TIMEOUT=5 "$psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -w -Atqc 'SELECT 1' >/dev/null 2>&1 || return 1
	if [[ $("$psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -w -Atqc \
		"SELECT 1 FROM pg_database WHERE datname = 'test'") != 1 ]]; then
		"$psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -w -qc 'CREATE DATABASE test' >/dev/null ||
			return 1
	fi
}

stop() {
	local dir=${1:?usage: postgres.sh stop DIR}
	[[ -f "$dir/data/PG_VERSION" ]] || die "$dir holds no server started by this script"
	local bin
	bin=$(bindir)
	[[ -n "$bin" ]] || die "cannot find pg_ctl"
	as_server_user "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >&2 || true
	rm -rf "$dir"
	log "stopped and removed $dir"
}

main() {
	local port=${ROTA_PG_PORT:-5432}
	local bin
	bin=$(bindir)

	# 1. A server that already runs.
	if port_in_use "$port"; then
		if [[ -n "$bin" ]] && usable "$port" "$bin/psql"; then
			log "using the server on 127.0.0.1:$port"
			url_for "$port"
			return
		fi
		if [[ -z "$bin" ]] && command -v psql >/dev/null 2>&1 && usable "$port" "$(command -v psql)"; then
			log "using the server on 127.0.0.1:$port"
			url_for "$port"
			return
		fi
		log "127.0.0.1:$port is taken by a server that does not let user postgres in without a password; starting another"
	fi

	# 2. The binaries.
	if [[ -z "$bin" ]]; then
		[[ $(id -u) -eq 0 ]] || die "PostgreSQL is not installed and installing it needs root (apt-get install postgresql)"
		command -v apt-get >/dev/null 2>&1 || die "PostgreSQL is not installed and apt-get is not available"
		log "installing PostgreSQL with apt-get"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update >&2 || die "apt-get update failed"
		apt-get install -y --no-install-recommends postgresql >&2 || die "apt-get install postgresql failed"
		bin=$(bindir)
		[[ -n "$bin" ]] || die "PostgreSQL installed, but initdb is nowhere to be found"
	fi
	if [[ $(id -u) -eq 0 ]] && ! id postgres >/dev/null 2>&1; then
		useradd --system --no-create-home --shell /bin/sh postgres || die "cannot create the user postgres to run the server"
	fi

	# 3. A throwaway cluster on a free port.
	while port_in_use "$port"; do
		port=$((port + 1))
		((port < 65535)) || die "no free port"
	done
	local dir=${ROTA_PG_DIR:-}
	if [[ -z "$dir" ]]; then
		dir=$(mktemp -d "${TMPDIR:-/tmp}/rota-pg.XXXXXX") || die "cannot make a temporary directory"
	fi
	mkdir -p "$dir" || die "cannot create $dir"
	if [[ $(id -u) -eq 0 ]]; then
		chown postgres "$dir" || die "cannot give $dir to the user postgres"
	fi
	chmod 700 "$dir"
	log "initdb in $dir/data"
	as_server_user "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --encoding=UTF8 --locale=C >"$dir/initdb.log" 2>&1 ||
		die "initdb failed: $(tail -n 5 "$dir/initdb.log")"
	log "starting the server on 127.0.0.1:$port"
	as_server_user "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
		-o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=200" start >&2 ||
		die "the server did not start: $(tail -n 5 "$dir/server.log" 2>/dev/null)"
	usable "$port" "$bin/psql" || die "the server on port $port started but does not accept connections"
	log "stop it with: $0 stop $dir"
	url_for "$port"
}

if [[ "${1:-}" == stop ]]; then
	stop "${2:-}"
else
	main
fi
