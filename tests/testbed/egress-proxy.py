#!/usr/bin/env python3
"""The test bed's egress guard: a loopback-only HTTP CONNECT proxy on a unix socket.

    egress-proxy.py SOCKET_PATH

kube-apiserver's EgressSelectorConfiguration (tests/testbed/up.sh) sends every connection it
would open to the "cluster" (kubelets for logs/exec/attach/port-forward, webhooks and aggregated
APIs by Service) and to "controlplane" URLs (webhooks by URL) here, as konnectivity's
HTTPConnect protocol: `CONNECT host:port HTTP/1.1`, answered by `HTTP/1.1 200`, then raw bytes.

Only literal loopback addresses (127.0.0.0/8, ::1) are tunnelled. Anything else -- another IP, or
a host name (never resolved here) -- is refused with 403 and logged, so the apiserver's error
reads "proxy error from <socket> while dialing <addr>, code 403: 403 Forbidden".
Python 3 standard library only. Logs one line per connection on stderr.
"""

import asyncio
import ipaddress
import os
import signal
import sys
import time

MAX_HEADER = 16 * 1024
HEADER_TIMEOUT_S = 10
DIAL_TIMEOUT_S = 10
T0 = time.monotonic()


def log(msg):
    print(f"[egress-proxy +{time.monotonic() - T0:.3f}s] {msg}", file=sys.stderr, flush=True)


def parse_target(authority):
    """`host:port` or `[v6]:port` -> (host, port) when host is a loopback IP literal, else
    raises ValueError with the reason."""
    if authority.startswith("["):
        host, sep, rest = authority[1:].partition("]")
        if not sep or not rest.startswith(":"):
            raise ValueError("malformed address")
        port = rest[1:]
    else:
        host, sep, port = authority.rpartition(":")
        if not sep:
            raise ValueError("no port")
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise ValueError("not an IP address (host names are never resolved)") from None
    if not ip.is_loopback:
        raise ValueError("not a loopback address")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError("bad port")
    return str(ip), int(port)


async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(64 * 1024)
            if not data:
                break
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        pass


async def reply(writer, status):
    writer.write(f"HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode())
    try:
        await writer.drain()
    except (ConnectionError, OSError):
        pass
    writer.close()


async def handle(creader, cwriter):
    try:
        head = await asyncio.wait_for(creader.readuntil(b"\r\n\r\n"), HEADER_TIMEOUT_S)
    except (asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
            ConnectionError) as e:
        log(f"dropped a connection without a complete request ({type(e).__name__})")
        cwriter.close()
        return
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split()
    if len(parts) != 3 or parts[0] != "CONNECT":
        log(f"REFUSED {line!r}: only CONNECT is served")
        await reply(cwriter, "405 Method Not Allowed")
        return
    try:
        host, port = parse_target(parts[1])
    except ValueError as e:
        log(f"REFUSED CONNECT {parts[1]}: {e}")
        await reply(cwriter, "403 Forbidden")
        return
    try:
        ureader, uwriter = await asyncio.wait_for(asyncio.open_connection(host, port), DIAL_TIMEOUT_S)
    except (asyncio.TimeoutError, OSError) as e:
        log(f"CONNECT {host}:{port} failed: {e}")
        await reply(cwriter, "502 Bad Gateway")
        return
    log(f"CONNECT {host}:{port} ok")
    cwriter.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
    await cwriter.drain()
    await asyncio.gather(pipe(creader, uwriter), pipe(ureader, cwriter))
    for w in (uwriter, cwriter):
        w.close()


async def main(path):
    if os.path.exists(path):
        os.unlink(path)
    old = os.umask(0o077)
    try:
        server = await asyncio.start_unix_server(handle, path=path, limit=MAX_HEADER)
    finally:
        os.umask(old)
    log(f"listening on {path} (CONNECT to loopback addresses only)")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for s in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(s, stop.set)
    await stop.wait()
    # Open tunnels are not waited for: asyncio.run cancels them when main returns.
    server.close()
    log("stopped")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: egress-proxy.py SOCKET_PATH", file=sys.stderr)
        sys.exit(2)
    asyncio.run(main(sys.argv[1]))
