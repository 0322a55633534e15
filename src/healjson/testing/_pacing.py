"""Paced writing for the scripted server's streamed replies: waits that notice a client gone
or the server stopping, keep-alives while waiting, frames written whole or byte by byte.

One `Pacer` serves one connection (its socket, its write file, the server's stop event).
"""

from __future__ import annotations

import select
import socket
import threading
import time
from typing import Any, BinaryIO, Final

from ._replies import ScriptedReply
from ._wire._sse import Planned

__all__ = ["POLL_S", "Pacer"]

POLL_S: Final = 0.05  # how often a waiting handler looks whether the server is stopping


class Pacer:
    """Writes and waits on one connection (`connection`, `wfile`), watching `stopping`."""

    __slots__ = ("connection", "stopping", "wfile")

    def __init__(
        self, connection: socket.socket, wfile: BinaryIO | Any, stopping: threading.Event
    ) -> None:
        self.connection = connection
        self.wfile = wfile
        self.stopping = stopping

    def write_events(
        self, reply: ScriptedReply, planned: Planned, *, chunked: bool
    ) -> tuple[int, bool]:
        """Write each frame (as one chunk when `chunked`, byte by byte with `byte_delay_s`),
        after the reply's wait before it (`first_event_delay_s`, `chunk_delay_s`, and
        `hold_open_s` before the stream's end); the number written before the client went away
        or the server stopped, and whether all was written and waited for (`OSError` from a
        write propagates)."""
        frames = planned.frames
        for sent, frame in enumerate(frames):
            wait = reply.first_event_delay_s if sent == 0 else reply.chunk_delay_s
            if sent == planned.events:
                wait += reply.hold_open_s
            if self.wait(reply, planned, wait, chunked=chunked) or self.client_gone():
                return sent, False
            if not self.write_frame(frame, reply.byte_delay_s, chunked=chunked):
                return sent, False
        held = planned.events == len(frames) and reply.hold_open_s
        if held and self.wait(reply, planned, reply.hold_open_s, chunked=chunked):
            return len(frames), False
        return len(frames), True

    def wait(
        self, reply: ScriptedReply, planned: Planned, seconds: float, *, chunked: bool
    ) -> bool:
        """Wait `seconds` (sending `planned.keepalive` every `keepalive_every_s`, if both are
        set); True when the server is stopping or the client went away meanwhile."""
        every = reply.keepalive_every_s if planned.keepalive else None
        if every is None:
            return self.pause(seconds)
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            if self.pause(min(every, left)):
                return True
            if end - time.monotonic() > 0:
                self.write(planned.keepalive, chunked=chunked)
        return False

    def pause(self, seconds: float) -> bool:
        """Wait `seconds`, watching whether the client goes away (a quiet server notices it no
        other way) and, every 50 ms, whether the server is stopping; True when either did."""
        stopping = self.stopping
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            if stopping.is_set() or self.client_gone(within=min(left, POLL_S)):
                return True
        return False

    def write_frame(self, frame: bytes, byte_delay_s: float, *, chunked: bool) -> bool:
        """Write one frame, at once or byte by byte; False when stopped part-way."""
        if not byte_delay_s:
            self.write(frame, chunked=chunked)
            return True
        stopping = self.stopping
        for index in range(len(frame)):
            if index and stopping.wait(byte_delay_s):
                return False
            self.write(frame[index : index + 1], chunked=chunked)
        return True

    def write(self, data: bytes, *, chunked: bool) -> None:
        self.wfile.write(b"%x\r\n%b\r\n" % (len(data), data) if chunked else data)

    def client_gone(self, within: float = 0.0) -> bool:
        """True when the client has closed the connection (waiting up to `within` seconds for
        that): the socket is readable and holds no data (its FIN), as a client waiting for the
        rest of a reply sends nothing. `stop()` shuts the socket down, which reads the same."""
        try:
            if select.select([self.connection], [], [], within)[0]:
                if self.connection.recv(1, socket.MSG_PEEK) == b"":
                    return True
            else:
                return False
        except ValueError:  # a descriptor select cannot watch: rely on write errors
            pass
        except OSError:
            return True
        if within:  # bytes are waiting (not a FIN) or nothing to watch: wait without spinning
            self.stopping.wait(within)
        return False
