#!/usr/bin/env bash
# image.sh — what `make image` runs: builds the container image from
# deploy/Containerfile with podman (or buildah when podman is absent), from
# the repository root.
#
# Usage: scripts/image.sh [NAME]      NAME defaults to localhost/mcpkit:VERSION
#
# Environment:
#   VERSION          the stamped version (default: git describe, like make build)
#   GO_IMAGE         the build stage's base (default: the Containerfile's,
#                    docker.io/library/golang:1.26-bookworm)
#   IMAGE_BUILDER    podman or buildah (default: the first one found)
#   STORAGE_DRIVER   containers/storage driver (default: vfs, which works
#                    without overlay support in the kernel or the sandbox)
#   ISOLATION        how RUN steps run (default: chroot, which needs no OCI
#                    runtime: on machines where crun/runc cannot set up
#                    cgroups or rlimits, as on the development machine, the
#                    default OCI isolation fails)
#
# When GO_IMAGE is not given and the default base can be neither found
# locally nor pulled (no route to the registry), the script builds a local
# base, localhost/mcpkit-go:GOVERSION, from this machine's Go installation
# (GOROOT) and CA bundle, once, and uses it: the Containerfile needs only a Go
# toolchain in the PATH, GOPATH=/go and /etc/ssl/certs/ca-certificates.crt.
# The build stage downloads modules through GOPROXY (default: go env GOPROXY).
#
# Progress goes to stderr, each line starting with "image.sh:"; the last
# line of stdout is the image's name.
set -euo pipefail

log() { printf 'image.sh: %s\n' "$*" >&2; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
name=${1:-localhost/mcpkit:$version}
driver=${STORAGE_DRIVER:-vfs}
isolation=${ISOLATION:-chroot}
default_base=$(sed -n 's/^ARG GO_IMAGE=//p' deploy/Containerfile)

builder=${IMAGE_BUILDER:-}
if [ -z "$builder" ]; then
	for b in podman buildah; do
		if command -v "$b" >/dev/null 2>&1; then
			builder=$b
			break
		fi
	done
fi
if [ -z "$builder" ]; then
	log "neither podman nor buildah is installed: apt-get install podman (Debian's package)"
	exit 1
fi
b() { "$builder" --storage-driver "$driver" "$@"; }
exists() { b inspect --type image "$1" >/dev/null 2>&1; }

# local_base: a build-stage base made of this machine's Go installation.
local_base() {
	local goroot gover tag dir
	goroot=$(go env GOROOT)
	gover=$(go env GOVERSION)
	tag=localhost/mcpkit-go:$gover
	if exists "$tag"; then
		log "build stage base: $tag (local, made earlier from $goroot)"
		echo "$tag"
		return
	fi
	dir=$(mktemp -d "${TMPDIR:-/tmp}/mcpkit-go-base.XXXXXX")
	# shellcheck disable=SC2064 # expand dir now
	trap "rm -rf '$dir'" RETURN
	mkdir -p "$dir/root/etc/ssl/certs" "$dir/root/tmp" "$dir/root/go" "$dir/root/usr/local"
	chmod 1777 "$dir/root/tmp"
	cp /etc/ssl/certs/ca-certificates.crt "$dir/root/etc/ssl/certs/"
	cp -a "$goroot" "$dir/root/usr/local/go"
	tar -C "$dir/root" -cf "$dir/base.tar" .
	if [ "$builder" = podman ]; then
		b import --change 'ENV PATH=/usr/local/go/bin:/go/bin' --change 'ENV GOPATH=/go' \
			"$dir/base.tar" "$tag" >/dev/null
	else
		local ctr
		ctr=$(b from scratch)
		b add "$ctr" "$dir/base.tar" / >/dev/null
		b config --env PATH=/usr/local/go/bin:/go/bin --env GOPATH=/go "$ctr"
		b commit -q "$ctr" "$tag" >/dev/null
		b rm "$ctr" >/dev/null
	fi
	log "build stage base: $tag (made from $goroot: $default_base could not be pulled)"
	echo "$tag"
}

base=${GO_IMAGE:-}
if [ -z "$base" ]; then
	if exists "$default_base" || timeout 120 "$builder" --storage-driver "$driver" pull -q "$default_base" >/dev/null 2>&1; then
		base=$default_base
		log "build stage base: $base"
	else
		base=$(local_base)
	fi
fi

log "building $name with $builder (storage $driver, isolation $isolation), version $version"
start=$(date +%s)
b build --format docker --layers=false --isolation "$isolation" -f deploy/Containerfile \
	--build-arg GO_IMAGE="$base" \
	--build-arg VERSION="$version" \
	--build-arg REVISION="$revision" \
	--build-arg GOPROXY="$(go env GOPROXY)" \
	-t "$name" . >&2
log "built $name in $(($(date +%s) - start))s"
echo "$name"
