#!/usr/bin/env bash
# Stop everything tests/testbed/up.sh <dir> started and remove <dir>.
#   tests/testbed/down.sh <dir>
# Sends TERM to every recorded process (group), waits up to ${PADDOCK_TESTBED_STOP_TIMEOUT:-5} s,
# then KILLs what is left. Idempotent; removes <dir> only if up.sh created it.
set -u
DIR="${1:?usage: down.sh <dir>}"
[ -d "$DIR" ] || exit 0
[ -f "$DIR/.paddock-testbed" ] || { echo "down.sh: $DIR was not made by up.sh; not touching it" >&2; exit 1; }
TIMEOUT="${PADDOCK_TESTBED_STOP_TIMEOUT:-5}"

starttime() {
  local s; s="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  s="${s##*) }"; echo "$s" | awk '{print $20}'
}
# alive NAME PID START: the recorded process still runs (same start time: not a reused pid)
alive() { [ "$2" != "$$" ] && [ "$2" != "$PPID" ] && [ "$(starttime "$2" 2>/dev/null)" = "$3" ]; }
signal() { # signal SIG PID: the process group it leads, else the process
  if [ "$(ps -o pgid= -p "$2" 2>/dev/null | tr -d ' ')" = "$2" ]; then kill -s "$1" -- "-$2" 2>/dev/null; fi
  kill -s "$1" "$2" 2>/dev/null
}
KNOWN=" up.sh reaper kwok kube-scheduler kube-controller-manager kube-apiserver etcd paddock-etcd egress-proxy pf-target "
stop() { # stop NAME... : TERM, wait, KILL for the named entries of the pids file
         # (no names: every entry; "--others": entries not started by up.sh, e.g. paddock)
  local want=" $* " name pid start left deadline
  [ -f "$DIR/pids" ] || return 0
  while read -r name pid start; do
    selected "$want" "$name" || continue
    alive "$name" "$pid" "$start" && signal TERM "$pid"
  done < "$DIR/pids"
  deadline=$(( $(date +%s) + TIMEOUT ))
  while :; do
    left=""
    while read -r name pid start; do
      selected "$want" "$name" || continue
      alive "$name" "$pid" "$start" && left="$left $name($pid)"
    done < "$DIR/pids"
    [ -z "$left" ] && return 0
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "[testbed-down] still running after ${TIMEOUT}s, sending KILL:$left" >&2
      while read -r name pid start; do
        selected "$want" "$name" || continue
        alive "$name" "$pid" "$start" && signal KILL "$pid"
      done < "$DIR/pids"
      sleep 0.2
      return 0
    fi
    sleep 0.1
  done
}
selected() { # selected WANT NAME
  case "$1" in
    "  ") return 0 ;;
    " --others ") [[ "$KNOWN" != *" $2 "* ]] ;;
    *) [[ "$1" == *" $2 "* ]] ;;
  esac
}
# A startup still in progress first (so that it starts nothing more), then the reaper, then the
# clients of the apiserver (paddock, kwok, scheduler, controller manager), the apiserver, and the
# stores last.
stop up.sh
stop reaper
stop --others            # processes the harness recorded (paddock): clients of the apiserver
stop kwok kube-scheduler kube-controller-manager
stop kube-apiserver
stop egress-proxy pf-target
stop etcd paddock-etcd
stop                     # anything left
# The marker goes last, so that a concurrent down.sh (up.sh's failure trap and the reaper can
# race) still recognises the directory while it is being emptied.
find "$DIR" -mindepth 1 -maxdepth 1 ! -name .paddock-testbed -exec rm -rf {} + 2>/dev/null
rm -f "$DIR/.paddock-testbed"; rmdir "$DIR" 2>/dev/null || rm -rf "$DIR"
