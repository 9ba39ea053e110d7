#!/usr/bin/env bash
# Build (or reuse from cache) the container images the real node runs, with no registry:
#   paddock.test/pause:3.10    the kubernetes release's own build/pause/linux/pause.c, gcc -static
#   paddock.test/busybox:1.35  Debian's busybox-static, every applet linked, FROM scratch
#   paddock.test/kubectl:1.33  the busybox image's files plus /bin/kubectl: the machine's pinned,
#                              statically linked kubectl.1.33 (next to its kubectl, as up.sh finds it)
#   paddock.test/metrics-server:<version>  build.sh --node's static binary, FROM scratch
#   paddock.test/static-base:1  what distroless/static holds, FROM scratch: /etc/passwd and
#                              /etc/group naming nonroot (65532), /etc/nsswitch.conf, the machine's
#                              CA bundle (Debian's ca-certificates), /tmp; deploy/Dockerfile's
#                              RUNTIME_IMAGE in the chart test (tests/e2e/tests/chart.rs)
# Each is an OCI archive written by buildah (Debian package) into
#   ${PADDOCK_TESTBED_CACHE:-$HOME/.cache/paddock-testbed}/images-<key>/<name>.tar
# where <key> hashes everything an image is made of (this script, pause.c, the busybox binary, kubectl, the CA bundle),
# so a change rebuilds and an unchanged tree reuses. node.sh imports the archives into containerd.
#
#   tests/testbed/images.sh [--print-dir]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$HERE/versions.env"
CACHE="${PADDOCK_TESTBED_CACHE:-$HOME/.cache/paddock-testbed}"
log() { echo "[testbed-images] $*" >&2; }
die() { echo "[testbed-images] ERROR: $*" >&2; exit 1; }

for t in buildah gcc; do command -v "$t" >/dev/null || die "$t is missing (scripts/install-node.sh installs it)"; done
BUSYBOX=/bin/busybox
[ -x "$BUSYBOX" ] && ! ldd "$BUSYBOX" >/dev/null 2>&1 || die "$BUSYBOX is not Debian's static busybox (apt-get install busybox-static)"
PAUSE_C="$(GOFLAGS=-mod=mod go env GOMODCACHE)/k8s.io/kubernetes@$K8S_VERSION/build/pause/linux/pause.c"
if [ ! -f "$PAUSE_C" ]; then
  GOTOOLCHAIN=local go mod download "k8s.io/kubernetes@$K8S_VERSION" >/dev/null 2>&1 || true
fi
[ -f "$PAUSE_C" ] || die "pause.c not found at $PAUSE_C"
eval "$("$HERE/build.sh" --node --print-env)"
METRICS_SERVER="$PADDOCK_METRICS_SERVER_BIN/metrics-server"
CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
KUBECTL_BIN="$(dirname "$(readlink -f "$(command -v kubectl || echo /nonexistent/kubectl)")")/kubectl.1.33"
[ -x "$KUBECTL_BIN" ] || die "kubectl.1.33 not found next to the machine's kubectl ($KUBECTL_BIN)"
! ldd "$KUBECTL_BIN" >/dev/null 2>&1 || die "$KUBECTL_BIN is dynamically linked; the kubectl image needs a static one"
[ -f "$CA_BUNDLE" ] || die "$CA_BUNDLE is missing (apt-get install ca-certificates)"

KEY="$(cat "$0" "$PAUSE_C" "$BUSYBOX" "$METRICS_SERVER" "$CA_BUNDLE" "$KUBECTL_BIN" | sha256sum | cut -c1-16)"
OUT="$CACHE/images-$KEY"
if [ "${1:-}" = --print-dir ] && [ -f "$OUT/.complete" ]; then echo "$OUT"; exit 0; fi
if [ -f "$OUT/.complete" ]; then log "images cached in $OUT"; exit 0; fi

mkdir -p "$CACHE"
exec 9>"$CACHE/.images.lock"
flock -w 1800 9 || die "timed out waiting for $CACHE/.images.lock"
if [ ! -f "$OUT/.complete" ]; then
  WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT
  # buildah keeps its layers in a store of its own under the cache (vfs: no overlay mounts needed)
  B=(buildah --root "$CACHE/buildah/root" --runroot "$WORK/run" --storage-driver vfs)
  rm -rf "$OUT.tmp"; mkdir -p "$OUT.tmp"

  image() { # image NAME:TAG ROOTFS_DIR ENTRYPOINT_JSON CMD_JSON
    local c; c="$("${B[@]}" from scratch)"
    "${B[@]}" add "$c" "$2" / >/dev/null
    "${B[@]}" config --entrypoint "$3" --cmd "$4" --os linux --arch amd64 --env PATH=/bin "$c"
    "${B[@]}" commit -q --format oci "$c" "$1" >/dev/null
    local file; file="${1##*/}"; file="$OUT.tmp/${file%%:*}.tar"
    "${B[@]}" push -q "$1" "oci-archive:$file:$1"
    "${B[@]}" rm "$c" >/dev/null
    "${B[@]}" rmi -f "$1" >/dev/null 2>&1 || true
    log "built $1 ($(du -h "$file" | cut -f1))"
  }

  mkdir -p "$WORK/pause"
  gcc -Os -static -Wall -Werror -DVERSION="v3.10-paddock-$K8S_VERSION" -o "$WORK/pause/pause" "$PAUSE_C"
  strip "$WORK/pause/pause"
  image paddock.test/pause:3.10 "$WORK/pause" '["/pause"]' ''

  R="$WORK/busybox"; mkdir -p "$R/bin" "$R/tmp" "$R/etc" "$R/root" "$R/var/www"
  cp "$BUSYBOX" "$R/bin/busybox"
  for a in $("$BUSYBOX" --list); do [ "$a" = busybox ] || ln -s busybox "$R/bin/$a"; done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' > "$R/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\n' > "$R/etc/group"
  chmod 1777 "$R/tmp"
  image paddock.test/busybox:1.35 "$R" '' '["sh"]'

  # kubectl in a pod (issue 38's tests: a client with the tenant's DNS): the same files, plus kubectl
  cp -a "$R" "$WORK/kubectl"
  cp "$KUBECTL_BIN" "$WORK/kubectl/bin/kubectl"
  image paddock.test/kubectl:1.33 "$WORK/kubectl" '' '["sh"]'

  mkdir -p "$WORK/metrics-server/tmp"; chmod 1777 "$WORK/metrics-server/tmp"
  cp "$METRICS_SERVER" "$WORK/metrics-server/metrics-server"
  image "paddock.test/metrics-server:$METRICS_SERVER_VERSION" "$WORK/metrics-server" '["/metrics-server"]' ''

  R="$WORK/static-base"; mkdir -p "$R/etc/ssl/certs" "$R/tmp" "$R/home/nonroot"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > "$R/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' > "$R/etc/group"
  printf 'hosts: files dns\n' > "$R/etc/nsswitch.conf"
  cp "$CA_BUNDLE" "$R/etc/ssl/certs/ca-certificates.crt"
  chmod 1777 "$R/tmp"; chown 65532:65532 "$R/home/nonroot"
  image paddock.test/static-base:1 "$R" '' ''

  rm -rf "$OUT"; mv "$OUT.tmp" "$OUT"; touch "$OUT/.complete"
fi
[ "${1:-}" = --print-dir ] && echo "$OUT"
log "images in $OUT"
