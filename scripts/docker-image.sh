#!/usr/bin/env bash
# Builds the container image of deploy/Dockerfile: the meridian binary and the shared
# libraries it links (from `ldd`) on an empty base, since no base image is pulled.
#
#   scripts/docker-image.sh [--binary PATH] [--tag NAME]
#
# Without --binary it runs `cargo build --release --locked --bin meridian` first.
# The image runs on any x86_64 Linux Docker engine; it holds this machine's libc.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bin=""
tag="meridian:latest"
while [ $# -gt 0 ]; do
    case "$1" in
        --binary) bin="$2"; shift 2 ;;
        --tag) tag="$2"; shift 2 ;;
        -h|--help) sed -n 2,9p "$0"; exit 0 ;;
        *) echo "docker-image.sh: unknown argument '$1' (want --binary PATH, --tag NAME)" >&2; exit 2 ;;
    esac
done
command -v docker >/dev/null || { echo "docker-image.sh: no docker command on this machine" >&2; exit 1; }
if [ -z "$bin" ]; then
    (cd "$here" && cargo build --release --locked --bin meridian)
    bin="$here/target/release/meridian"
fi
[ -x "$bin" ] || { echo "docker-image.sh: $bin is not an executable" >&2; exit 1; }
ctx="$(mktemp -d "${TMPDIR:-/tmp}/meridian-image.XXXXXX")"
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/root/usr/local/bin" "$ctx/root/tmp" "$ctx/root/cluster"
chmod 1777 "$ctx/root/tmp"
cp "$bin" "$ctx/root/usr/local/bin/meridian"
# The release profile keeps debug info (for profiling); the image does not need it.
if command -v strip >/dev/null; then strip --strip-debug "$ctx/root/usr/local/bin/meridian"; fi
# Every library the dynamic loader would map, and the loader itself, at the same path.
for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
    cp --parents -L "$lib" "$ctx/root/"
done
cp "$here/deploy/Dockerfile" "$ctx/Dockerfile"
# (the legacy builder's deprecation notice is shown only if the build fails)
if ! out="$(docker build -q -t "$tag" "$ctx" 2>&1)"; then
    echo "$out" >&2
    exit 1
fi
echo "built image $tag ($(du -sh "$ctx/root" | cut -f1) of files)"
