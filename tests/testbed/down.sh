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
KNOWN=" up.sh reaper kubelet kube-proxy tenant-dns containerd node-egress node-api-svc node-api-ns node-api-host kwok kube-scheduler kube-controller-manager kube-apiserver etcd paddock-etcd egress-proxy pf-target "
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
# The real node (node.sh): its kubelet, kube-proxy and the tenant DNS, then every process of its pods (by the
# node's cgroup root), containerd's shims, containerd, the unix-socket bridges; then the mounts
# the kubelet and containerd made under <dir>/node, the network namespace and the cgroups.
node_down() {
  local n="$DIR/node" ns root h pids
  [ -d "$n" ] || return 0
  stop kubelet kube-proxy tenant-dns
  root="$(cat "$n/cgroup-root" 2>/dev/null)"
  if [ -n "$root" ]; then
    for _ in 1 2 3; do
      pids="$(cat /sys/fs/cgroup/pids"$root"/cgroup.procs /sys/fs/cgroup/pids"$root"/*/cgroup.procs \
              /sys/fs/cgroup/pids"$root"/*/*/cgroup.procs /sys/fs/cgroup/pids"$root"/*/*/*/cgroup.procs 2>/dev/null)"
      [ -n "$pids" ] || break
      kill -KILL $pids 2>/dev/null; sleep 0.2
    done
  fi
  pkill -KILL -f -- "-address $n/containerd.sock" 2>/dev/null
  stop containerd node-egress node-api-svc node-api-ns node-api-host
  # deepest mounts first; a lazy unmount for anything still busy
  grep -F " $n/" /proc/self/mountinfo | awk '{print $5}' | sort -r | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
  done
  ns="$(cat "$n/netns" 2>/dev/null)"
  [ -n "$ns" ] && ip netns delete "$ns" 2>/dev/null
  if [ -n "$root" ]; then
    for h in /sys/fs/cgroup/*/; do
      [ -d "$h${root#/}" ] && find "$h${root#/}" -depth -type d -exec rmdir {} + 2>/dev/null
    done
  fi
  return 0
}

# A startup still in progress first (so that it starts nothing more), then the reaper, then the
# clients of the apiserver (paddock, kwok, scheduler, controller manager), the apiserver, and the
# stores last.
stop up.sh
stop reaper
node_down
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
