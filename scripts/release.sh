#!/usr/bin/env bash
# release.sh — what `make release` runs: static, version-stamped mcpkit
# binaries for every release platform in dist/ (git-ignored), and
# dist/SHA256SUMS over them (`cd dist && sha256sum -c SHA256SUMS` checks it).
#
# Usage: scripts/release.sh [--only GOOS/GOARCH]...
#   --only builds just the platforms named (the release test builds
#   linux/amd64 alone to keep CI short); without it, every platform below.
#
# Environment:
#   VERSION   the stamped version (default: git describe, like make build);
#             `mcpkit version` prints it
#   DIST      the output directory (default: dist in the checkout); it is
#             emptied first
#
# Each binary is built like `make build` (the workspace, -trimpath, the
# version in pkg/cli.Version), with CGO_ENABLED=0 (static, cross-compiled
# by the Go toolchain alone), -buildvcs=false and -s -w (no symbol table or
# DWARF: a third smaller), and named mcpkit_VERSION_GOOS_GOARCH (.exe on
# windows). Progress goes to stderr.
set -euo pipefail

log() { printf 'release.sh: %s\n' "$*" >&2; }

platforms=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64)

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
dist=${DIST:-$root/dist}

only=()
while [ "$#" -gt 0 ]; do
	case "$1" in
	--only)
		[ "$#" -ge 2 ] || { log "--only needs GOOS/GOARCH"; exit 2; }
		if [[ ! " ${platforms[*]} " =~ [[:space:]]$2[[:space:]] ]]; then
			log "--only $2: not a release platform (${platforms[*]})"
			exit 2
		fi
		only+=("$2")
		shift 2
		;;
	*)
		log "unknown argument $1 (usage: scripts/release.sh [--only GOOS/GOARCH]...)"
		exit 2
		;;
	esac
done
[ "${#only[@]}" -eq 0 ] || platforms=("${only[@]}")

rm -rf "$dist"
mkdir -p "$dist"
files=()
for p in "${platforms[@]}"; do
	goos=${p%/*}
	goarch=${p#*/}
	out=mcpkit_${version}_${goos}_${goarch}
	[ "$goos" != windows ] || out+=.exe
	log "building $out"
	CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch go build -trimpath -buildvcs=false \
		-ldflags "-s -w -X github.com/mcpkit/mcpkit/pkg/cli.Version=$version" \
		-o "$dist/$out" ./cmd/mcpkit
	files+=("$out")
done
(cd "$dist" && sha256sum "${files[@]}" >SHA256SUMS)
log "wrote ${#files[@]} binaries and SHA256SUMS to $dist (version $version)"
