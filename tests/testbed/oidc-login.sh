#!/usr/bin/env bash
# kubelogin's --browser-command for the test bed: signs in at the test OIDC provider's login
# form (tests/testbed/oidc-provider) with curl, as a person would in a browser. kubelogin runs
# it with the URL of its local redirect server; it inherits kubectl's environment:
#   OIDC_TEST_USER, OIDC_TEST_PASSWORD  the test user
#   OIDC_TEST_CA                        the provider's CA certificate
set -euo pipefail
url="$1"
jar="$(mktemp)"
trap 'rm -f "$jar"' EXIT
c=(curl -sS --max-time 20 --cacert "$OIDC_TEST_CA" -c "$jar" -b "$jar")
# kubelogin's page -> the provider's /authorize -> its login form (hidden field "id").
page="$("${c[@]}" -L -w '\n%{url_effective}' "$url")"
final="$(tail -n 1 <<<"$page")"
id="$(grep -o 'name="id" value="[^"]*"' <<<"$page" | head -n 1 | sed 's/.*value="//; s/"$//')"
[ -n "$id" ] || { echo "oidc-login.sh: no login form at $final" >&2; exit 1; }
origin="$(sed -E 's#^(https://[^/]+).*#\1#' <<<"$final")"
# The form's POST, then the redirects back to kubelogin with the code.
"${c[@]}" -L -o /dev/null --data-urlencode "username=$OIDC_TEST_USER" \
  --data-urlencode "password=$OIDC_TEST_PASSWORD" --data-urlencode "id=$id" "$origin/login/username"
