#!/usr/bin/env python3
"""The test bed's egress guard: a loopback-only HTTP CONNECT proxy on a unix socket.

    egress-proxy.py SOCKET_PATH [--allow CIDR]... [--via CIDR=SOCKET]...

kube-apiserver's EgressSelectorConfiguration (tests/testbed/up.sh) sends every connection it
would open to the "cluster" (kubelets for logs/exec/attach/port-forward, webhooks and aggregated
APIs by Service) and to "controlplane" URLs (webhooks by URL) here, as konnectivity's
HTTPConnect protocol: `CONNECT host:port HTTP/1.1`, answered by `HTTP/1.1 200`, then raw bytes.

Only literal loopback addresses (127.0.0.0/8, ::1) are tunnelled. Anything else -- another IP, or
a host name (never resolved here) -- is refused with 403 and logged, so the apiserver's error
reads "proxy error from <socket> while dialing <addr>, code 403: 403 Forbidden".

The real node (tests/testbed/node.sh) lives in a network namespace of its own with no route out.
Two more options reach into it without giving the host a route there:
  --via CIDR=SOCKET   a CONNECT to an address in CIDR is handed, as it came, to the proxy on
                      unix socket SOCKET (a second egress-proxy.py running inside the node's
                      namespace), which answers it; the host never dials that address itself.
  --allow CIDR        also tunnel to addresses in CIDR (the inner proxy: the node's address and
                      its pod network, which exist only inside that namespace).
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


ALLOW = []  # extra networks tunnelled directly (--allow)
VIA = []  # (network, unix socket) pairs handed on (--via)


def parse_target(authority):
    """`host:port` or `[v6]:port` -> (ip, port) when host is an IP literal, else raises
    ValueError with the reason."""
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
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError("bad port")
    return ip, int(port)


def route(ip):
    """'direct', or the unix socket of the proxy to hand the CONNECT to; ValueError if neither."""
    if ip.is_loopback or any(ip in net for net in ALLOW):
        return "direct"
    for net, sock in VIA:
        if ip in net:
            return sock
    raise ValueError("not a loopback address" + (" nor an allowed network" if ALLOW or VIA else ""))


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
        ip, port = parse_target(parts[1])
        how = route(ip)
    except ValueError as e:
        log(f"REFUSED CONNECT {parts[1]}: {e}")
        await reply(cwriter, "403 Forbidden")
        return
    host = str(ip)
    try:
        if how == "direct":
            dial = asyncio.open_connection(host, port)
        else:
            dial = asyncio.open_unix_connection(how)
        ureader, uwriter = await asyncio.wait_for(dial, DIAL_TIMEOUT_S)
    except (asyncio.TimeoutError, OSError) as e:
        log(f"CONNECT {host}:{port} failed: {e}")
        await reply(cwriter, "502 Bad Gateway")
        return
    if how == "direct":
        log(f"CONNECT {host}:{port} ok")
        cwriter.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await cwriter.drain()
    else:
        # the inner proxy answers the CONNECT (200, 403 or 502) and then carries the bytes
        log(f"CONNECT {host}:{port} handed to {how}")
        uwriter.write(head)
        await uwriter.drain()
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
    extra = "".join(f", {n}" for n in ALLOW) + "".join(f", {n} via {s}" for n, s in VIA)
    log(f"listening on {path} (CONNECT to loopback addresses{extra} only)")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for s in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(s, stop.set)
    await stop.wait()
    # Open tunnels are not waited for: asyncio.run cancels them when main returns.
    server.close()
    log("stopped")


def parse_args(argv):
    usage = "usage: egress-proxy.py SOCKET_PATH [--allow CIDR]... [--via CIDR=SOCKET]..."
    if not argv:
        sys.exit(usage)
    path, rest = argv[0], argv[1:]
    while rest:
        flag, value, rest = rest[0], rest[1] if len(rest) > 1 else None, rest[2:]
        if flag == "--allow" and value:
            ALLOW.append(ipaddress.ip_network(value))
        elif flag == "--via" and value and "=" in value:
            net, sock = value.split("=", 1)
            VIA.append((ipaddress.ip_network(net), sock))
        else:
            sys.exit(usage)
    return path


if __name__ == "__main__":
    asyncio.run(main(parse_args(sys.argv[1:])))
