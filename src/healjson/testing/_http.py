"""The scripted server's HTTP side: a threading server on loopback that accepts until told to
stop (woken at once), tracks its open connections (so `stop()` can cut them) and stays quiet when
a client goes away mid-reply."""

from __future__ import annotations

import contextlib
import json
import selectors
import socket
import sys
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ._wire import JSON_TYPE

__all__ = ["LoopbackHTTPServer", "QuietHandler"]


class LoopbackHTTPServer(ThreadingHTTPServer):
    """The threading HTTP server a `ScriptedServer` answers through (`scripted`: that server)."""

    # the default 5 drops connections at concurrency 50; 128 did at 200 on a loaded machine (a
    # dropped SYN is retried after 1 s, then 3 s: past the SDK's 5 s connect timeout)
    request_queue_size = 1024
    daemon_threads = True
    allow_reuse_address = True
    timeout = 0  # `handle_request` is called once the listening socket is readable: no wait

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        scripted: Any,
    ) -> None:
        self.scripted = scripted
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, handler)
        self._stopped = False
        self._wake, self._waker = socket.socketpair()

    def serve_until_stopped(self) -> None:
        """Accept connections until `stop_serving`, which wakes the wait at once."""
        with selectors.DefaultSelector() as selector:
            selector.register(self, selectors.EVENT_READ)
            selector.register(self._wake, selectors.EVENT_READ)
            while not self._stopped:
                ready = selector.select()
                if self._stopped:
                    break
                if any(key.fileobj is self for key, _ in ready):
                    self.handle_request()
                self.service_actions()

    def stop_serving(self) -> None:
        """End `serve_until_stopped` (it returns promptly; join its thread)."""
        self._stopped = True
        with contextlib.suppress(OSError):
            self._waker.send(b"\0")

    def server_close(self) -> None:
        super().server_close()
        self._wake.close()
        self._waker.close()

    def track(self, connection: socket.socket, *, open_: bool) -> None:
        with self._connections_lock:
            if open_:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def close_connections(self) -> None:
        """Shut down open keep-alive connections so their handler threads end now."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet when a client went away mid-reply (e.g. after its own timeout)."""
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)  # a bug in the handler: show it


class QuietHandler(BaseHTTPRequestHandler):
    """A handler for `LoopbackHTTPServer`: HTTP/1.1 keep-alive, its connection tracked while
    open, nothing logged, every method handed to `dispatch`; JSON bodies sent with a request
    id, as the providers' APIs send them."""

    protocol_version = "HTTP/1.1"
    server_version = "healjson-scripted/1"
    sys_version = ""
    disable_nagle_algorithm = True
    server: LoopbackHTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, open_=True)

    def finish(self) -> None:
        self.server.track(self.connection, open_=False)
        with contextlib.suppress(OSError):  # the client may already be gone
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Log nothing: tests and benchmarks want a quiet stderr."""

    def do_GET(self) -> None:
        self.dispatch()

    def do_POST(self) -> None:
        self.dispatch()

    def do_PUT(self) -> None:
        self.dispatch()

    def do_PATCH(self) -> None:
        self.dispatch()

    def do_DELETE(self) -> None:
        self.dispatch()

    def dispatch(self) -> None:
        """Answer the request just read (a subclass routes it)."""
        raise NotImplementedError

    def _request_id(self) -> str:
        return f"req_scripted_{id(self):x}_{time.monotonic_ns()}"

    def _send_json(self, status: int, payload: Mapping[str, Any]) -> None:
        self._send(status, json.dumps(payload).encode(), JSON_TYPE, {})

    def _send(
        self, status: int, body: bytes, content_type: str, headers: Mapping[str, str]
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("x-request-id", self._request_id())
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)
