#!/usr/bin/env bash
# Build (or reuse from cache) third-party operators a tenant installs through paddock (issue 38,
# acceptance check 2; docs/operators.md), from their own source on the Go module proxy:
#   cert-manager  controller, webhook, cainjector, acmesolver, ctl (the startupapicheck Job's image)
#   external-dns  with its in-memory provider (lists and watches cluster-wide)
# statically (CGO_ENABLED=0), into OCI image archives built with buildah FROM scratch (the
# approach of images.sh: no registry), named paddock.test/<name>:<version>, and their Helm
# charts taken from the modules' own sources, with the images pointed at the local ones in a
# values file per chart (nothing else changed). Versions: operators.env. The result:
#   ${PADDOCK_TESTBED_CACHE:-$HOME/.cache/paddock-testbed}/operators-<key>/
#       bin/<name>                       static binaries
#       images/<name>.tar                OCI archives (ctr -n k8s.io images import --snapshotter native)
#       charts/cert-manager/             deploy/charts/cert-manager + the release's generation step
#       charts/external-dns/             charts/external-dns as it is in the module
#       values/cert-manager.yaml         the image overrides (only those)
#       values/external-dns.yaml
#       build-times.txt                  seconds per build step of the run that filled the entry
# where <key> hashes this script, operators.env, the Go version and the CA bundle.
#
#   tests/testbed/operators.sh [--print-dir]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=operators.env
source "$HERE/operators.env"
CACHE="${PADDOCK_TESTBED_CACHE:-$HOME/.cache/paddock-testbed}"
log() { echo "[testbed-operators] $*" >&2; }
die() { echo "[testbed-operators] ERROR: $*" >&2; exit 1; }

for t in go buildah python3; do command -v "$t" >/dev/null || die "$t is missing (scripts/install-node.sh installs buildah)"; done
CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
[ -f "$CA_BUNDLE" ] || die "$CA_BUNDLE is missing (apt-get install ca-certificates)"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false -mod=mod"

KEY="$(cat "$0" "$HERE/operators.env" "$CA_BUNDLE" <(go version) | sha256sum | cut -c1-16)"
OUT="$CACHE/operators-$KEY"
if [ -f "$OUT/.complete" ]; then
  if [ "${1:-}" = --print-dir ]; then echo "$OUT"; else log "operators cached in $OUT"; fi
  exit 0
fi

mkdir -p "$CACHE"
exec 9>"$CACHE/.operators.lock"
flock -w 5400 9 || die "timed out waiting for $CACHE/.operators.lock"
if [ ! -f "$OUT/.complete" ]; then
  WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT
  rm -rf "$OUT.tmp"; mkdir -p "$OUT.tmp"/{bin,images,charts,values}
  TIMES="$OUT.tmp/build-times.txt"
  timed() { # timed LABEL cmd...
    local t0=$SECONDS; "${@:2}"; log "$1 took $((SECONDS - t0)) s"; echo "$1 $((SECONDS - t0))" >> "$TIMES"
  }
  go mod download -json "github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION" >/dev/null \
    || die "the Go module proxy ($(go env GOPROXY)) does not serve cert-manager $CERT_MANAGER_VERSION"
  CM_SRC="$(go mod download -json "github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION" | python3 -c 'import json,sys;print(json.load(sys.stdin)["Dir"])')"
  ED_SRC="$(go mod download -json "sigs.k8s.io/external-dns@$EXTERNAL_DNS_VERSION" | python3 -c 'import json,sys;print(json.load(sys.stdin)["Dir"])')"
  [ -d "$CM_SRC/cmd/controller" ] || die "cert-manager $CERT_MANAGER_VERSION has no cmd/ in its root module (see operators.env)"

  # cert-manager: a wrapper module requiring the release, with the release's own replace line
  # (go install pkg@version refuses modules with replace directives); the main packages are
  # built from the dependency, so the build list is the release's own.
  mkdir -p "$WORK/cm"
  (
    cd "$WORK/cm"
    printf 'module local.test/paddock-operators/cert-manager\n\ngo 1.19\n\nrequire github.com/cert-manager/cert-manager %s\n' "$CERT_MANAGER_VERSION" > go.mod
    awk '/^replace / {print}' "$CM_SRC/go.mod" >> go.mod
    for cmd in controller webhook cainjector acmesolver ctl; do
      timed "cert-manager-$cmd" go build -o "$OUT.tmp/bin/cert-manager-$cmd" \
        -ldflags "-s -w -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=$CERT_MANAGER_VERSION -X github.com/cert-manager/cert-manager/pkg/util.AppGitCommit=$CERT_MANAGER_VERSION" \
        "github.com/cert-manager/cert-manager/cmd/$cmd"
    done
  )
  # external-dns: no replace lines, go install of the release as it is.
  timed external-dns env GOBIN="$WORK/gobin" go install \
    -ldflags "-s -w -X sigs.k8s.io/external-dns/pkg/apis/externaldns.Version=$EXTERNAL_DNS_VERSION" \
    "sigs.k8s.io/external-dns@$EXTERNAL_DNS_VERSION"
  cp "$WORK/gobin/external-dns" "$OUT.tmp/bin/external-dns"
  for b in "$OUT.tmp"/bin/*; do ! ldd "$b" >/dev/null 2>&1 || die "$b is dynamically linked"; done

  # Images, FROM scratch as in images.sh. The charts run them with runAsNonRoot and no
  # runAsUser, as the upstream distroless images are: USER 65532 (nonroot). Each holds what
  # distroless/static holds (passwd/group with nonroot, nsswitch.conf, the CA bundle, /tmp).
  B=(buildah --root "$CACHE/buildah/root" --runroot "$WORK/run" --storage-driver vfs)
  image() { # image NAME:TAG ROOTFS_DIR ENTRYPOINT_JSON
    local c; c="$("${B[@]}" from scratch)"
    "${B[@]}" add "$c" "$2" / >/dev/null
    "${B[@]}" config --entrypoint "$3" --cmd '' --user 65532:65532 --os linux --arch amd64 --env PATH=/bin "$c"
    "${B[@]}" commit -q --format oci "$c" "$1" >/dev/null
    local file; file="${1##*/}"; file="$OUT.tmp/images/${file%%:*}.tar"
    "${B[@]}" push -q "$1" "oci-archive:$file:$1"
    "${B[@]}" rm "$c" >/dev/null
    "${B[@]}" rmi -f "$1" >/dev/null 2>&1 || true
    log "built $1 ($(du -h "$file" | cut -f1))"
  }
  BASE="$WORK/base"; mkdir -p "$BASE/etc/ssl/certs" "$BASE/tmp" "$BASE/home/nonroot" "$BASE/app"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > "$BASE/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' > "$BASE/etc/group"
  printf 'hosts: files dns\n' > "$BASE/etc/nsswitch.conf"
  cp "$CA_BUNDLE" "$BASE/etc/ssl/certs/ca-certificates.crt"
  chmod 1777 "$BASE/tmp"; chown 65532:65532 "$BASE/home/nonroot"
  t0=$SECONDS
  for name in cert-manager-controller cert-manager-webhook cert-manager-cainjector cert-manager-acmesolver cert-manager-ctl external-dns; do
    R="$WORK/img-$name"; cp -a "$BASE" "$R"; cp "$OUT.tmp/bin/$name" "$R/app/$name"
    v=$CERT_MANAGER_VERSION; [ "$name" = external-dns ] && v=$EXTERNAL_DNS_VERSION
    image "paddock.test/$name:$v" "$R" "[\"/app/$name\"]"
  done
  echo "images $((SECONDS - t0))" >> "$TIMES"

  # cert-manager's chart: deploy/charts/cert-manager plus what the release's make/manifests.mk
  # does to it (the minimum: Chart.yaml's version and appVersion set to the release, the
  # prerelease annotation's placeholder set to "false", templates/crds.yaml = deploy/crds/*.yaml
  # joined by '---' inside {{- if .Values.installCRDs }}). Not done: the README and the signing
  # key annotation (documentation and provenance only).
  C="$OUT.tmp/charts/cert-manager"
  cp -r "$CM_SRC/deploy/charts/cert-manager" "$C"; chmod -R u+w "$C"
  sed -e "s/^version: .*/version: $CERT_MANAGER_VERSION/" -e "s/^appVersion: .*/appVersion: $CERT_MANAGER_VERSION/" \
      -e 's/"{{IS_PRERELEASE}}"/"false"/' "$C/Chart.template.yaml" > "$C/Chart.yaml"
  rm -f "$C/Chart.template.yaml" "$C/README.template.md" "$C/signkey_annotation.txt"
  {
    echo '{{- if .Values.installCRDs }}'
    first=1
    for f in "$CM_SRC"/deploy/crds/crd-*.yaml; do
      [ $first = 1 ] || echo '---'; first=0; cat "$f"
    done
    echo '{{- end }}'
  } > "$C/templates/crds.yaml"
  cp -r "$ED_SRC/charts/external-dns" "$OUT.tmp/charts/external-dns"; chmod -R u+w "$OUT.tmp/charts/external-dns"

  cat > "$OUT.tmp/values/cert-manager.yaml" <<YAML
# The local images (tests/testbed/operators.sh); nothing else changed.
image: {repository: paddock.test/cert-manager-controller, tag: $CERT_MANAGER_VERSION}
webhook: {image: {repository: paddock.test/cert-manager-webhook, tag: $CERT_MANAGER_VERSION}}
cainjector: {image: {repository: paddock.test/cert-manager-cainjector, tag: $CERT_MANAGER_VERSION}}
acmesolver: {image: {repository: paddock.test/cert-manager-acmesolver, tag: $CERT_MANAGER_VERSION}}
startupapicheck: {image: {repository: paddock.test/cert-manager-ctl, tag: $CERT_MANAGER_VERSION}}
YAML
  cat > "$OUT.tmp/values/external-dns.yaml" <<YAML
# The local image (tests/testbed/operators.sh); nothing else changed.
image: {repository: paddock.test/external-dns, tag: $EXTERNAL_DNS_VERSION}
YAML
  rm -rf "$OUT"; mv "$OUT.tmp" "$OUT"; touch "$OUT/.complete"
  log "build times (s): $(tr '\n' ' ' < "$OUT/build-times.txt")"
fi
if [ "${1:-}" = --print-dir ]; then echo "$OUT"; else log "operators in $OUT"; fi
