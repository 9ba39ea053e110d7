#!/usr/bin/env python3
"""Shares of a paddock CPU profile by category (docs/performance/sessions-11-13.md and
sessions-14-16.md, issue 19).

    perf script -i paddock.perf --no-inline | scripts/profile-categories.py [US_PER_REQUEST]

Two tables. "Inclusive": a sample counts in every category with a frame anywhere on its stack
(categories overlap: rustls, paddock's pipeline and the upstream client all run inside hyper's
front connection task). "Exclusive": each sample counts once, in the category of the frame
nearest its leaf that names one (std/core/alloc frames are skipped, so a memcpy or a drop
inside h2 counts as memcpy or h2); this is the table that adds up to 100 %. With the run's
CPU per request (µs) as argument, shares are also printed as µs per request.
"""
import re
import sys
from collections import Counter

INCLUSIVE = [
    ("rustls (both sides)", r"rustls"),
    ("write syscalls", r"__sys_sendmsg|sendmsg|ksys_write|__x64_sys_write\b"),
    ("futex syscalls", r"futex"),
    ("h2 crate", r"\bh2::"),
    ("paddock_h2 server (front)", r"paddock_h2::server|lean_front"),
    ("paddock_h2 client (upstream)", r"paddock_h2::client|lean_h2"),
    ("front/conn.rs Front (the front's service)", r"paddock_server::front::conn::"),
    ("tokio park/unpark", r"tokio::runtime::.*(park|unpark|Parker|Unparker|notify_parked|wake_by_ref|Idle)"),
    ("epoll_wait", r"epoll_wait"),
    ("malloc/free", r"\bmalloc\b|\bfree\b|_int_malloc|_int_free|cfree|realloc"),
    ("memcpy/memmove", r"memcpy|memmove"),
    ("paddock_core", r"paddock_core::"),
    ("hyper", r"\bhyper::"),
]
# Nearest-the-leaf first match wins; order decides between patterns of one frame.
EXCLUSIVE = [
    ("kernel: context switch / idle", r"finish_task_switch|\bschedule\b|__schedule"),
    ("kernel: epoll", r"epoll_wait|ep_poll|do_epoll"),
    ("kernel: futex", r"futex"),
    ("kernel: tcp send", r"sendmsg|sys_write|tcp_sendmsg|__x64_sys_writev|sock_write"),
    ("kernel: tcp receive", r"recvmsg|sys_read|tcp_recvmsg|sock_read|recvfrom"),
    ("kernel: other", r"^(entry_SYSCALL|do_syscall_64|asm_|irq|__softirq)"),
    ("malloc/free", r"^(_?mi_|malloc|free|_int_malloc|_int_free|cfree|realloc|malloc_consolidate|unlink_chunk|__libc_malloc|__libc_free|tcache)"),
    ("memcpy/memmove/memcmp", r"memcpy|memmove|memcmp|memset"),
    ("rustls / aws-lc", r"rustls|aws_lc|ring::|aes_|gcm_|chacha|sha"),
    ("paddock_core", r"paddock_core::"),
    ("paddock_h2 server (front)", r"paddock_h2::server"),
    ("paddock_h2 client (upstream)", r"paddock_h2::client|lean_h2"),
    ("paddock_h2 shared (frames, HPACK, writer)", r"paddock_h2::"),
    ("paddock, other", r"paddock"),
    ("h2 crate: HPACK", r"h2::hpack"),
    ("h2 crate: other", r"\bh2::"),
    ("hyper", r"\bhyper"),
    ("tokio", r"tokio"),
    ("futures", r"futures"),
    ("bytes / http", r"^<?(bytes|http)::"),
]
GENERIC = re.compile(r"^<?(core|alloc|std)::")
OWNED = re.compile(r"h2::|hyper::|paddock|tokio")


def samples(lines):
    stack = []
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if stack:
                yield stack
            stack = []
        elif line[0] in " \t":
            parts = line.strip().split(None, 1)
            if len(parts) == 2:
                # "sym+0x1f (/path/to/dso)": the dso's path (".../paddock") must not match.
                frame = re.sub(r"\s+\([^()]*\)$", "", parts[1])
                stack.append(re.sub(r"\+0x[0-9a-f]+$", "", frame))
    if stack:
        yield stack


def exclusive(stack, cats):
    for frame in stack:
        if GENERIC.match(frame) and not OWNED.search(frame):
            continue
        for name, rx in cats:
            if rx.search(frame):
                return name
    return "other"


def main():
    us = float(sys.argv[1]) if len(sys.argv) > 1 else None
    inc = [(n, re.compile(p)) for n, p in INCLUSIVE]
    exc = [(n, re.compile(p)) for n, p in EXCLUSIVE]
    total, inclusive, excl = 0, Counter(), Counter()
    for stack in samples(sys.stdin):
        total += 1
        joined = "\n".join(stack)
        for name, rx in inc:
            if rx.search(joined):
                inclusive[name] += 1
        if "finish_task_switch" in stack[0]:
            inclusive["kernel context switch (leaf)"] += 1
        excl[exclusive(stack, exc)] += 1
    total = max(total, 1)

    def show(name, n):
        extra = f" ({us * n / total:.1f} µs)" if us else ""
        print(f"{name}: {100 * n / total:.1f} %{extra}")

    print(f"samples {total}\n== inclusive")
    for name, n in inclusive.most_common():
        show(name, n)
    print("== exclusive")
    for name, n in excl.most_common():
        show(name, n)


main()
