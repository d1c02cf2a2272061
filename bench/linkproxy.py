#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""A TCP proxy on loopback that counts the bytes of every connection in both directions and,
when asked, behaves like a phone's Wi-Fi link: a one-way delay and a bandwidth cap per
direction, with a bounded amount in flight so TCP's back-pressure works as on a real link
(this kernel has no netem/tbf).  Stdlib only.

As a module (bench/bench_wire.py):
    p = LinkProxy(target_port, rtt_ms=6, mbit=300); p.start()   # p.port is where to connect
    p.reset(); ... run a client through 127.0.0.1:p.port ...; p.wait_idle(); p.counts()
As a program:
    linkproxy.py TARGET_PORT [--listen PORT] [--rtt MS] [--mbit M]
        runs until killed; whenever a connection ends, prints "up N down M": the bytes of all
        connections so far.

"up" is client -> server (what a push sends), "down" server -> client.
"""

import argparse
import collections
import socket
import sys
import threading
import time

CHUNK = 65536


class _Direction:
    """One direction of one connection: a reader that stamps each piece with the time it
    leaves the far end of the link, and a writer that delivers it then."""

    def __init__(self, proxy, src, dst, key):
        self.proxy, self.src, self.dst, self.key = proxy, src, dst, key
        self.q = collections.deque()
        self.cv = threading.Condition()
        self.queued = 0
        self.free_at = 0.0
        self.eof = False

    def reader(self):
        p = self.proxy
        try:
            while True:
                d = self.src.recv(CHUNK)
                with self.cv:
                    if not d:
                        break
                    while self.queued > p.qmax:
                        self.cv.wait()
                    now = time.monotonic()
                    if p.rate:
                        # Serialisation on the link: each byte takes 1/rate seconds.
                        self.free_at = max(now, self.free_at) + len(d) / p.rate
                        due = self.free_at + p.delay
                    else:
                        due = now + p.delay
                    self.q.append((due, d))
                    self.queued += len(d)
                    self.cv.notify_all()
                p.add(self.key, len(d))
        except OSError:
            pass
        with self.cv:
            self.eof = True
            self.cv.notify_all()

    def writer(self):
        try:
            while True:
                with self.cv:
                    while not self.q and not self.eof:
                        self.cv.wait()
                    if not self.q:
                        break
                    due, d = self.q[0]
                wait = due - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                self.dst.sendall(d)
                with self.cv:
                    self.q.popleft()
                    self.queued -= len(d)
                    self.cv.notify_all()
        except OSError:
            pass
        try:
            self.dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


class LinkProxy:
    def __init__(self, target_port, listen_port=0, rtt_ms=0.0, mbit=0.0, target_host="127.0.0.1"):
        self.target = (target_host, target_port)
        self.delay = rtt_ms / 2000.0
        self.rate = mbit * 1e6 / 8 if mbit else 0.0
        # In flight on the "link" before the sender is held back: a few bandwidth-delay
        # products, at least 256 KiB.
        self.qmax = max(256 * 1024, int((self.rate or 1e9) * max(self.delay, 0.001) * 4))
        self.lock = threading.Condition()
        self.up = self.down = 0
        self.pieces = {"up": 0, "down": 0}  # recv() calls with data: about the writes of each side
        self.active = 0
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", listen_port))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.on_close = None

    def add(self, key, n):
        with self.lock:
            self.pieces[key] += 1
            if key == "up":
                self.up += n
            else:
                self.down += n

    def reset(self):
        with self.lock:
            self.up = self.down = 0
            self.pieces = {"up": 0, "down": 0}

    def counts(self):
        with self.lock:
            return self.up, self.down

    def wait_idle(self, timeout=60.0):
        """Waits until every connection through the proxy has ended (the counts are final)."""
        end = time.monotonic() + timeout
        with self.lock:
            while self.active > 0:
                left = end - time.monotonic()
                if left <= 0:
                    raise TimeoutError("connections still open through the proxy")
                self.lock.wait(left)

    def start(self):
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.active += 1
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        s = None
        try:
            s = socket.create_connection(self.target)
            for x in (c, s):
                x.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            up, down = _Direction(self, c, s, "up"), _Direction(self, s, c, "down")
            ts = [threading.Thread(target=f, daemon=True)
                  for f in (up.reader, up.writer, down.reader, down.writer)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        except OSError:
            pass
        finally:
            for x in (c, s):
                if x is not None:
                    try:
                        x.close()
                    except OSError:
                        pass
            with self.lock:
                self.active -= 1
                self.lock.notify_all()
            if self.on_close:
                self.on_close()


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("target_port", type=int)
    ap.add_argument("--listen", type=int, default=0)
    ap.add_argument("--rtt", type=float, default=0.0, help="round trip added, ms")
    ap.add_argument("--mbit", type=float, default=0.0, help="bandwidth cap per direction, Mbit/s")
    a = ap.parse_args(argv)
    p = LinkProxy(a.target_port, a.listen, a.rtt, a.mbit)

    def report():
        print("up %d down %d" % p.counts(), flush=True)
    p.on_close = report
    print("listening on 127.0.0.1:%d" % p.port, flush=True)
    p.start()
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
