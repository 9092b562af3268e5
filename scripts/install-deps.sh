#!/usr/bin/env bash
# install-deps.sh — idempotently install what the test suite needs that a
# fresh (Debian/Ubuntu) machine lacks. Safe to run repeatedly: every
# dependency is checked first and only installed when missing.
#
# Usage: scripts/install-deps.sh            (as root, or with sudo available)
#        scripts/install-deps.sh --bench    also what the benchmarks' peers
#                                           need (hnswlib; `make bench-store`
#                                           runs this, `make test` and CI do not)
#
# Node.js and npm themselves come with the machine (Node 20); the npm suites
# are installed from their lockfiles.
#
# To add a dependency, write a need_<name> function below and call it from
# main(). Progress is reported on stderr.
#
# TLS certificates for tests are generated in Go (internal/redistest), so
# openssl is intentionally not required.
set -euo pipefail

log() { printf 'install-deps: %s\n' "$*" >&2; }

# Run a command as root (directly if we are root, else via sudo).
as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		log "need root to run: $* (and sudo is not available)"
		return 1
	fi
}

APT_UPDATED=0
apt_install() {
	if ! command -v apt-get >/dev/null 2>&1; then
		log "apt-get not found; please install manually: $*"
		return 1
	fi
	if [ "$APT_UPDATED" -eq 0 ]; then
		log "running apt-get update"
		as_root apt-get update >&2
		APT_UPDATED=1
	fi
	log "apt-get install $*"
	as_root env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y --no-install-recommends "$@" >&2
}

# need_redis: redis-server (and redis-cli) for internal/redistest. Tests start
# their own disposable servers on free ports; the distribution's service on the
# shared port 6379 is stopped and disabled if the package auto-started it.
need_redis() {
	if command -v redis-server >/dev/null 2>&1; then
		log "redis-server already installed: $(redis-server --version 2>/dev/null || echo '?')"
		return 0
	fi
	apt_install redis-server redis-tools
	log "installed: $(redis-server --version 2>/dev/null || echo '?')"

	# Stop/disable the auto-started system service; tests never use it.
	if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
		as_root systemctl disable --now redis-server >/dev/null 2>&1 || true
		log "stopped and disabled redis-server systemd service (if it was running)"
	fi
	if command -v service >/dev/null 2>&1; then
		as_root service redis-server stop >/dev/null 2>&1 || true
		log "stopped redis-server system service via 'service' (if it was running)"
	fi
	if command -v update-rc.d >/dev/null 2>&1; then
		as_root update-rc.d redis-server disable >/dev/null 2>&1 || true
	fi
}

# pg_bindir prints the directory holding PostgreSQL's initdb and postgres, as
# internal/pgtest looks for them (pg_config --bindir, then the newest
# /usr/lib/postgresql/*/bin), or fails.
pg_bindir() {
	local d
	for d in "$(pg_config --bindir 2>/dev/null || true)" $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -rn); do
		if [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/postgres" ]; then
			printf '%s\n' "$d"
			return 0
		fi
	done
	return 1
}

# need_postgres: Debian's postgresql package, for internal/pgtest. Tests run
# initdb in temporary directories and start their own servers on free ports
# (as the postgres system user when run as root); the cluster the package
# creates and starts on port 5432 is stopped and disabled.
need_postgres() {
	local d
	if d=$(pg_bindir); then
		log "postgresql already installed: $("$d/postgres" --version 2>/dev/null || echo '?')"
		return 0
	fi
	apt_install postgresql
	d=$(pg_bindir) || { log "postgresql installed, but initdb and postgres not found"; return 1; }
	log "installed: $("$d/postgres" --version 2>/dev/null || echo '?')"

	# Stop/disable the auto-started cluster; tests never use it.
	if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
		as_root systemctl disable --now postgresql >/dev/null 2>&1 || true
		log "stopped and disabled the postgresql systemd service (if it was running)"
	fi
	if command -v service >/dev/null 2>&1; then
		as_root service postgresql stop >/dev/null 2>&1 || true
	fi
	if command -v update-rc.d >/dev/null 2>&1; then
		as_root update-rc.d postgresql disable >/dev/null 2>&1 || true
	fi
}

# need_npm_suites: the pinned npm test suites (test/conformance: the official
# MCP conformance suite; test/interop: the official TypeScript clients),
# installed from their lockfiles with install scripts disabled.
need_npm_suites() {
	local root dir
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	if ! command -v npm >/dev/null 2>&1; then
		log "npm not found: install Node.js 20+ with npm (the conformance and interop tests need it)"
		return 1
	fi
	for dir in "$root/test/conformance" "$root/test/interop"; do
		if [ -d "$dir/node_modules" ]; then
			log "npm packages already installed in ${dir#"$root"/}"
			continue
		fi
		log "npm ci in ${dir#"$root"/}"
		npm ci --prefix "$dir" --ignore-scripts --no-audit --no-fund >&2
	done
}

# need_chromium: Debian's headless Chromium, which the OAuth browser test
# (test/e2e_oauth_browser_test.go) drives with chromedp at /usr/bin/chromium.
need_chromium() {
	if [ -x /usr/bin/chromium ]; then
		log "chromium already installed: $(/usr/bin/chromium --version 2>/dev/null || echo '?')"
		return 0
	fi
	apt_install chromium
	log "installed: $(/usr/bin/chromium --version 2>/dev/null || echo '?')"
}

# need_podman: podman, for the container image test only (MCPKIT_IMAGE_TEST=1,
# as `make image-test` sets it): `make test` does not build the image.
need_podman() {
	[ "${MCPKIT_IMAGE_TEST:-}" = 1 ] || return 0
	if command -v podman >/dev/null 2>&1 || command -v buildah >/dev/null 2>&1; then
		log "podman or buildah already installed"
		return 0
	fi
	apt_install podman
	log "installed: $(podman --version 2>/dev/null || echo '?')"
}

# need_hnswlib: Debian's libhnswlib-dev (hnswlib, header-only) and g++, for
# the benchmarks only (--bench): BenchmarkStoreVector measures the HNSW build
# against hnswlib, compiling test/internal/hnswlibpeer's program with g++.
need_hnswlib() {
	[ "$BENCH" = 1 ] || return 0
	local missing=()
	[ -f /usr/include/hnswlib/hnswlib.h ] || missing+=(libhnswlib-dev)
	command -v g++ >/dev/null 2>&1 || missing+=(g++)
	if [ ${#missing[@]} -eq 0 ]; then
		log "hnswlib and g++ already installed"
		return 0
	fi
	apt_install "${missing[@]}"
	log "installed: ${missing[*]}"
}

BENCH=0

main() {
	local arg
	for arg in "$@"; do
		case "$arg" in
		--bench) BENCH=1 ;;
		*)
			log "unknown argument: $arg (usage: scripts/install-deps.sh [--bench])"
			return 2
			;;
		esac
	done
	need_redis
	need_postgres
	need_npm_suites
	need_podman
	need_chromium
	need_hnswlib
	log "done"
}

main "$@"
