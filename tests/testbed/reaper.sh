#!/usr/bin/env bash
# reaper.sh OWNER_PID OWNER_STARTTIME DIR — started by up.sh --owner-pid in its own session.
# Waits until the owner process is gone (or DIR was torn down), then runs down.sh DIR.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OWNER=$1 OWNER_START=$2 DIR=$3
trap '' INT HUP            # survive the terminal's signals to the test run; TERM from down.sh ends us
owner_alive() {
  local s; s="$(cat "/proc/$OWNER/stat" 2>/dev/null)" || return 1
  s="${s##*) }"; [ "$(echo "$s" | awk '{print $20}')" = "$OWNER_START" ]
}
while owner_alive && [ -f "$DIR/.paddock-testbed" ]; do sleep 1; done
if [ -f "$DIR/.paddock-testbed" ]; then
  echo "[testbed-reaper] owner $OWNER is gone; tearing down $DIR"
  exec "$HERE/down.sh" "$DIR"
fi
