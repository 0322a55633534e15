"""Decode the bytes a command reads (a reply, a scenario file) as UTF-8, strictly.

Text that is not UTF-8 is refused with where its first bad byte is: no character is replaced
or guessed, so nothing the CLI reports as healed holds a character the input did not.
"""

from __future__ import annotations

__all__ = ["NotUtf8", "decode_utf8"]


class NotUtf8(ValueError):
    """Bytes that are not UTF-8; the message says where the first bad byte is."""


def decode_utf8(data: bytes, name: str) -> str:
    """`data` decoded as UTF-8; `NotUtf8` ("NAME is not UTF-8 text: byte 0xff at offset 12
    (line 1, byte 13)") when it is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = exc.start
        line = data.count(b"\n", 0, start) + 1
        column = start - data.rfind(b"\n", 0, start)
        where = f"byte 0x{data[start]:02x} at offset {start} (line {line}, byte {column})"
        raise NotUtf8(f"{name} is not UTF-8 text: {where}") from exc
