#!/usr/bin/env bash
# run.sh — what `make run` serves: the whole product on loopback, over HTTP,
# from bin/mcpkit:
#
#   - the core with the diag plugin;
#   - resp, against a disposable redis-server this script starts: a free
#     loopback port (never 6379), its own temporary directory, no
#     persistence, a random password in a file (0600); stopped and removed
#     when mcpkit exits. mcpkit itself never starts or stops a datastore;
#     this script does, for the demo only;
#   - store, on a file that persists between runs: data/store.db in the
#     checkout (git-ignored; MCPKIT_DATA_DIR moves it), with data/files/ as
#     the directory its backup, dump and load tools may use;
#   - actions: the action framework's example app on embedded state (no
#     Redis): its users and messages in data/actions.db, its web sessions,
#     rate-limit counts and OAuth clients, codes and tokens in the process
#     (lost at exit); its HTTP API under /api (OpenAPI at /api/swagger), its
#     WebSocket at /ws, and its OAuth 2.1 authorization server (the sign-in
#     and sign-up pages at /oauth/authorize, metadata under /.well-known),
#     its dynamic registrations raised from the production limit (5 an hour
#     per address) to 1000 an hour when it serves on loopback, so that a
#     developer can try client after client; the map says which applies.
#
# /mcp wants a bearer token: one the OAuth server issued (what an OAuth
# capable client gets by itself: it meets the 401, discovers, registers and
# opens the authorize page), or the static token this script writes to a
# file (0600) in its temporary directory, new on every run, for clients
# without OAuth (curl, the Inspector CLI). The token is never printed: the
# map names its file.
#
# Usage: scripts/run.sh [MCPKIT_ARGS...]
#   MCPKIT_ARGS default to `serve --http 127.0.0.1:8080` (`--http 127.0.0.1:0`
#   picks a free port); `--config FILE` (the generated one) is appended, so
#   pass neither --config nor --plugins. It serves HTTP only: --stdio is
#   refused (run `bin/mcpkit serve --stdio` for that).
#   MCPKIT_BIN overrides the binary (default: bin/mcpkit beside this script).
#
# Output: once mcpkit listens, the first lines on stdout are the map of where
# each part is (see print_map), then an `mcpServers` snippet and the
# Inspector CLI command that uses the static token; nothing else is written
# to stdout. mcpkit's log goes to stderr, held back until the
# map is printed. Progress goes to stderr, each line starting with "run.sh:";
# "run.sh: redis-server pid=PID port=PORT dir=DIR" names the server it
# started and the temporary directory, "run.sh: store file=FILE
# files_dir=DIR" the store's file, and "run.sh: mcpkit pid=PID" mcpkit.
# SIGINT, SIGTERM or SIGHUP stop mcpkit, then redis-server, then remove the
# temporary directory; the script exits with mcpkit's status.
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
for arg in "$@"; do
	if [ "$arg" = --stdio ] || [ "$arg" = -stdio ]; then
		log "run.sh serves HTTP only; for stdio run: $bin serve --stdio"
		exit 2
	fi
done

dir=$(mktemp -d "${TMPDIR:-/tmp}/mcpkit-run.XXXXXX")
redis_pid=""
mcpkit_pid=""
tail_pid=""

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
	if [ -n "$tail_pid" ]; then # it ends with mcpkit, after copying the last lines
		wait "$tail_pid" 2>/dev/null || true
	fi
	stop_redis
	rm -rf "$dir"
}
trap cleanup EXIT
# SIGINT, SIGTERM or SIGHUP to this script asks mcpkit to shut down (or,
# before it runs, stops the start); the script waits for it, then stops
# redis-server. A server stopping before it was ready gets no map. mcpkit
# gets SIGTERM, which it handles as SIGINT: a background job starts with
# SIGINT ignored until mcpkit installs its handler, so a SIGINT sent
# while it starts would be lost.
stopping=""
trap 'stopping=1; [ -z "$mcpkit_pid" ] || kill -TERM "$mcpkit_pid" 2>/dev/null || true' INT TERM HUP

# secret FILE: writes a random 32-hex-digit secret to FILE, readable by its
# owner only.
secret() { (umask 077 && od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$1"); }

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
	# A random password: nothing else on this machine reaches the demo's data.
	secret "$dir/password"
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
		chmod 600 "$dir/redis.conf"
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

# The configuration: every plugin this binary carries of diag, resp, store
# and actions, and the static token.
plugins=$("$bin" plugins | awk 'NR > 1 {print $1}')
has() { grep -qx "$1" <<<"$plugins"; }
secret "$dir/token"
enable='"diag"'
configs=""
add_config() {
	enable+=', "'"$1"'"'
	[ -z "$configs" ] || configs+=', '
	configs+='"'"$1"'": {"config": '"$2"'}'
}
if has resp; then
	start_redis
	add_config resp '{"default_target": "local", "targets": {"local": {"host": "127.0.0.1", "port": '"$redis_port"', "password_file": "'"$dir/password"'"}}}'
else
	log "this binary has no resp plugin"
fi
data=${MCPKIT_DATA_DIR:-$root/data}
if has store || has actions; then
	mkdir -p "$data/files"
	data=$(cd "$data" && pwd)
fi
if has store; then
	add_config store '{"path": "'"$data/store.db"'", "files_dir": "'"$data/files"'"}'
	log "store file=$data/store.db files_dir=$data/files"
fi
# http_addr ARGS...: the address of --http among mcpkit's arguments.
http_addr() {
	local arg prev=""
	for arg in "$@"; do
		case "$arg" in
		--http=* | -http=*)
			echo "${arg#*=}"
			return
			;;
		esac
		if [ "$prev" = --http ] || [ "$prev" = -http ]; then
			echo "$arg"
			return
		fi
		prev=$arg
	done
}
# on_loopback ADDR: ADDR (host:port) names a loopback host; an empty host
# (":8080") is every interface.
on_loopback() {
	case "${1%:*}" in
	127.* | localhost | "[::1]") return 0 ;;
	esac
	return 1
}
# OAuth registrations: the production limit (5 an hour per address) stops
# a developer trying a few clients; on loopback only, where every client is
# this machine's, the demo raises it.
register_limit=5
register_note="clients an hour per address (the production limit: mcpkit serves beyond loopback)"
if on_loopback "$(http_addr "$@")"; then
	register_limit=1000
	register_note="clients an hour per address (raised for trying clients on loopback; the production default is 5)"
fi
if has actions; then
	# No "redis" section: the app's state is embedded. No OAuth issuer: each
	# request's own origin, right for 127.0.0.1 and localhost alike.
	add_config actions '{"data_path": "'"$data/actions.db"'", "oauth": {"register_limit": '"$register_limit"'}}'
	log "actions app file=$data/actions.db api=/api oauth=on register_limit=$register_limit"
fi
printf '{"enable": [%s], "http": {"bearer_tokens_file": "%s"}, "plugins": {%s}}\n' \
	"$enable" "$dir/token" "$configs" >"$dir/mcpkit.json"

# print_map URL: the map of where each part is, on stdout (URL is mcpkit's
# /mcp, as it logged it).
print_map() {
	local mcp=$1 base=${1%/mcp} ws
	ws=${base/#http/ws}
	row() { printf '  %-18s %s\n' "$1" "$2"; }
	local also=""
	! has resp || also=", and redis-server"
	echo "mcpkit serves the whole product on loopback; Ctrl-C stops it$also."
	row "MCP" "$mcp"
	local oauth=""
	! has actions || oauth="; or sign in with OAuth"
	row "MCP token file" "$dir/token  (static bearer token, 0600, new each run$oauth)"
	row "health" "$base/healthz"
	if has actions; then
		row "app API" "$base/api  (e.g. $base/api/status)"
		row "app OpenAPI" "$base/api/swagger"
		row "app WebSocket" "$ws/ws"
		row "app data file" "$data/actions.db  (users, messages; sessions and OAuth state in memory)"
		row "OAuth authorize" "$base/oauth/authorize  (sign-in and sign-up page; a client opens it with its request)"
		row "OAuth metadata" "$base/.well-known/oauth-authorization-server"
		row "resource metadata" "$base/.well-known/oauth-protected-resource/mcp"
		row "OAuth register" "$register_limit $register_note"
	fi
	if has store; then
		row "store file" "$data/store.db  (backup, dump and load files in $data/files)"
	fi
	if has resp; then
		row "redis-server" "127.0.0.1:$redis_port  (pid $redis_pid, password in $dir/password, stopped on exit)"
	fi
	if has actions; then
		echo "mcpServers, for a client that signs in with OAuth (a browser opens at the authorize page):"
	else
		echo "mcpServers, for a client that sends the static token (add its Authorization header):"
	fi
	printf '{\n  "mcpServers": {\n    "mcpkit": {\n      "type": "http",\n      "url": "%s"\n    }\n  }\n}\n' "$mcp"
	echo "A client without OAuth sends the static token as a header, e.g. the Inspector CLI:"
	# shellcheck disable=SC2016 # $(cat ...) is for the user's shell
	printf '  npx -y @modelcontextprotocol/inspector@2.12.0 --cli %s --transport http --header "Authorization: Bearer $(cat %s)" --method tools/list\n' "$mcp" "$dir/token"
}

# listening_url: the /mcp URL from mcpkit's "listening" log line (text or
# JSON format), or nothing before it logs one.
listening_url() {
	sed -nE -e 's/.*msg=listening .*url=([^ ]+).*/\1/p' -e 's/.*"msg":"listening".*"url":"([^"]+)".*/\1/p' "$dir/mcpkit.log" | head -n 1
}

if [ -n "$stopping" ]; then
	log "stopped before mcpkit started"
	exit 0
fi
# mcpkit's log waits in a file until the map is printed, then follows it to
# stderr; stdout is the map's alone.
: >"$dir/mcpkit.log"
"$bin" "$@" --config "$dir/mcpkit.json" >>"$dir/mcpkit.log" 2>&1 &
mcpkit_pid=$!
log "mcpkit pid=$mcpkit_pid"
url=""
for _ in $(seq 600); do # 60 s
	url=$(listening_url)
	[ -z "$url" ] && [ -z "$stopping" ] && kill -0 "$mcpkit_pid" 2>/dev/null || break
	sleep 0.1
done
if [ -n "$stopping" ]; then
	url=""
elif [ -n "$url" ]; then
	print_map "$url"
elif kill -0 "$mcpkit_pid" 2>/dev/null; then
	log "mcpkit did not listen within 60 s; stopping it"
	kill -TERM "$mcpkit_pid" 2>/dev/null || true
fi
tail -n +1 -s 0.2 --pid="$mcpkit_pid" -f "$dir/mcpkit.log" >&2 &
tail_pid=$!

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
if [ -z "$url" ] && [ -z "$stopping" ] && [ "$status" -eq 0 ]; then
	status=1 # it never served
fi
exit "$status"
