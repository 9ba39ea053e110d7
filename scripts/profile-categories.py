#!/usr/bin/env python3
"""Shares of a paddock CPU profile by category (docs/performance.md, issue 19).

    perf script -i paddock.perf --no-inline | scripts/profile-categories.py

Each category counts a sample once if a frame anywhere on its stack matches (categories
overlap: rustls and h2 run inside hyper's connection tasks); "kernel context switch" counts
samples whose leaf is `finish_task_switch`. Multiply a share by the run's CPU per request
for microseconds per request.
"""
import sys, re
cats = [
 ("rustls (both sides)", re.compile(r"rustls")),
 ("write syscalls", re.compile(r"__sys_sendmsg|sendmsg|ksys_write|__x64_sys_write\b")),
 ("futex syscalls", re.compile(r"futex")),
 ("h2 crate", re.compile(r"\bh2::")),
 ("kernel context switch (leaf)", None),
 ("tokio park/unpark", re.compile(r"tokio::runtime::.*(park|unpark|Parker|Unparker|notify_parked|wake_by_ref|Idle)")),
 ("epoll_wait", re.compile(r"epoll_wait")),
 ("malloc/free", re.compile(r"\bmalloc\b|\bfree\b|_int_malloc|_int_free|cfree|realloc")),
 ("memcpy/memmove", re.compile(r"memcpy|memmove")),
 ("paddock_core", re.compile(r"paddock_core::")),
 ("hyper", re.compile(r"\bhyper::")),
 ("upstream h2_conn drive", re.compile(r"h2_conn::drive")),
]
total=0; counts={c[0]:0 for c in cats}
stack=[]
def flush():
    global total
    if not stack: return
    total+=1
    joined="\n".join(stack)
    for name,rx in cats:
        if rx is None:
            if "finish_task_switch" in stack[0]: counts[name]+=1
        elif rx.search(joined): counts[name]+=1
for line in sys.stdin:
    line=line.rstrip("\n")
    if not line.strip():
        flush(); stack=[]; continue
    if line.startswith("\t") or line.startswith(" "):
        parts=line.strip().split(None,1)
        if len(parts)==2: stack.append(parts[1])
flush()
print(f"samples {total}")
for name,_ in cats:
    print(f"{name}: {100*counts[name]/max(total,1):.1f} %")
