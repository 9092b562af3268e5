#!/usr/bin/env bash
# run.sh — what `make run` serves: bin/mcpkit with every plugin a newcomer can
# try at once. When the binary carries the resp plugin, the script first starts
# a disposable redis-server for it: a free loopback port (never 6379), its own
# temporary directory, no persistence, a random password in a file, and a
# generated mcpkit configuration whose resp target points at it. When mcpkit
# exits (or the script is interrupted: the signal is passed on to mcpkit), the
# script stops that redis-server and removes the directory. mcpkit itself never
# starts or stops a datastore; this script does, for the demo only. When the
# binary carries the store plugin, the store is a file that persists between
# runs: data/store.db in the checkout (git-ignored; MCPKIT_DATA_DIR moves it),
# with data/files/ as the directory its backup, dump and load tools may use.
# The action framework's example app keeps its messages in data/actions.db and
# serves its HTTP API under /api beside /mcp.
#
# Usage: scripts/run.sh [MCPKIT_ARGS...]
#   MCPKIT_ARGS default to `serve --http 127.0.0.1:8080`; `--config FILE` (the
#   generated one) is appended, so pass neither --config nor --plugins.
#   MCPKIT_BIN overrides the binary (default: bin/mcpkit beside this script).
#
# Progress goes to stderr, each line starting with "run.sh:"; the line
# "run.sh: redis-server pid=PID port=PORT dir=DIR" names the server it started,
# and "run.sh: store file=FILE files_dir=DIR" the store's file.
set -euo pipefail

log() { printf 'run.sh: %s\n' "$*" >&2; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${MCPKIT_BIN:-$root/bin/mcpkit}
if [ ! -x "$bin" ]; then
	log "$bin is missing: run make build first"
	exit 1
fi
if [ "$#" -eq 0 ]; then
	set -- serve --http 127.0.0.1:8080
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/mcpkit-run.XXXXXX")
redis_pid=""
mcpkit_pid=""

# stop_redis: SIGTERM, then SIGKILL after 5 s; waits until it is gone.
stop_redis() {
	[ -n "$redis_pid" ] || return 0
	kill -TERM "$redis_pid" 2>/dev/null || true
	for _ in $(seq 50); do
		kill -0 "$redis_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$redis_pid" 2>/dev/null || true
	wait "$redis_pid" 2>/dev/null || true
	log "redis-server pid=$redis_pid stopped"
	redis_pid=""
}
cleanup() {
	if [ -n "$mcpkit_pid" ]; then # the script itself failed: do not leave mcpkit behind
		kill -TERM "$mcpkit_pid" 2>/dev/null || true
		wait "$mcpkit_pid" 2>/dev/null || true
	fi
	stop_redis
	rm -rf "$dir"
}
trap cleanup EXIT

# port_in_use PORT: something already accepts connections on it.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# start_redis: starts redis-server on a free port, retrying when another
# process takes the port first. Sets redis_pid and redis_port.
start_redis() {
	local redis_server attempt port
	if ! redis_server=$(command -v "${MCPKIT_REDIS_SERVER:-redis-server}"); then
		log "redis-server not found: run scripts/install-deps.sh (or make deps)"
		return 1
	fi
	# A random hex password: nothing else on this machine reaches the demo's data.
	od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$dir/password"
	for attempt in 1 2 3 4 5; do
		port=$((20000 + RANDOM % 40000))
		if [ "$port" -eq 6379 ] || port_in_use "$port"; then
			continue
		fi
		cat >"$dir/redis.conf" <<-EOF
			bind 127.0.0.1
			protected-mode yes
			port $port
			dir "$dir"
			logfile "$dir/redis.log"
			daemonize no
			save ""
			appendonly no
			requirepass $(cat "$dir/password")
		EOF
		: >"$dir/redis.log"
		# Its own session: a Ctrl-C in the terminal reaches mcpkit, and this
		# script stops redis-server after mcpkit has closed its connections.
		setsid "$redis_server" "$dir/redis.conf" >>"$dir/redis.log" 2>&1 &
		redis_pid=$!
		for _ in $(seq 100); do
			if grep -q 'Ready to accept connections' "$dir/redis.log"; then
				redis_port=$port
				log "redis-server pid=$redis_pid port=$port dir=$dir"
				return 0
			fi
			kill -0 "$redis_pid" 2>/dev/null || break
			sleep 0.1
		done
		if grep -q 'Address already in use' "$dir/redis.log"; then
			stop_redis
			log "port $port was taken (attempt $attempt); trying another"
			continue
		fi
		log "redis-server did not start; its log:"
		tail -n 20 "$dir/redis.log" >&2
		stop_redis
		return 1
	done
	log "no free port for redis-server after 5 attempts"
	return 1
}

plugins=$("$bin" plugins | awk 'NR > 1 {print $1}')
enable='"diag"'
configs=""
if grep -qx resp <<<"$plugins"; then
	start_redis
	enable+=', "resp"'
	configs+='"resp": {"config": {"default_target": "local", "targets": {"local": {"host": "127.0.0.1", "port": '"$redis_port"', "password_file": "'"$dir/password"'"}}}}'
else
	log "this binary has no resp plugin"
fi
if grep -qx store <<<"$plugins"; then
	data=${MCPKIT_DATA_DIR:-$root/data}
	mkdir -p "$data/files"
	data=$(cd "$data" && pwd)
	enable+=', "store"'
	[ -z "$configs" ] || configs+=', '
	configs+='"store": {"config": {"path": "'"$data/store.db"'", "files_dir": "'"$data/files"'"}}'
	log "store file=$data/store.db files_dir=$data/files"
fi
if grep -qx actions <<<"$plugins"; then
	data=${MCPKIT_DATA_DIR:-$root/data}
	mkdir -p "$data"
	data=$(cd "$data" && pwd)
	enable+=', "actions"'
	[ -z "$configs" ] || configs+=', '
	configs+='"actions": {"config": {"data_path": "'"$data/actions.db"'"}}'
	log "actions app file=$data/actions.db api=/api"
fi
printf '{"enable": [%s], "plugins": {%s}}\n' "$enable" "$configs" >"$dir/mcpkit.json"

"$bin" "$@" --config "$dir/mcpkit.json" &
mcpkit_pid=$!
# SIGINT or SIGTERM to this script asks mcpkit to shut down; the script waits
# for it, then stops redis-server.
trap 'kill -INT "$mcpkit_pid" 2>/dev/null || true' INT TERM
status=0
wait "$mcpkit_pid" || status=$?
# A trapped signal ends wait early (status > 128) while mcpkit shuts down.
while [ "$status" -gt 128 ] && kill -0 "$mcpkit_pid" 2>/dev/null; do
	status=0
	wait "$mcpkit_pid" || status=$?
done
if [ "$status" -gt 128 ]; then # mcpkit exited after the early return: its saved status
	s=0
	wait "$mcpkit_pid" 2>/dev/null || s=$?
	[ "$s" -eq 127 ] || status=$s
fi
mcpkit_pid=""
exit "$status"
