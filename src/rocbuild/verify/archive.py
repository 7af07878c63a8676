"""Static archives (`ar`, `.a`): the object files in them, which carry device code as a shared library does.

Format (System V / GNU): "!<arch>\\n", then per member a 60-byte header (name 16, mtime 12, uid 6,
gid 6, mode 8, size 10, "`\\n") and its data, padded to an even length. GNU keeps long names in a
"//" member and refers to them as "/OFFSET"; BSD writes "#1/LEN" with the name before the data.
Thin archives ("!<thin>\\n") only name files elsewhere and are not read.
"""

from __future__ import annotations

from collections.abc import Iterator

from rocbuild.verify.bundles import Buf

AR_MAGIC = b"!<arch>\n"
HEADER = 60


def members(buf: Buf) -> Iterator[tuple[str, int, int]]:
    """(name, offset of the data, size) of each member; stops at the first header that does not hold."""
    pos, long_names = len(AR_MAGIC), b""
    end = len(buf)
    while pos + HEADER <= end:
        head = bytes(buf[pos:pos + HEADER])
        if head[58:60] != b"`\n":
            return
        try:
            size = int(head[48:58].decode("ascii").strip() or "0")
        except ValueError:
            return
        if size < 0:
            return
        raw = head[:16].decode("ascii", "replace").rstrip()
        data, length = pos + HEADER, size
        if data + size > end:
            return
        if raw == "//":
            long_names = bytes(buf[data:data + size])
        elif raw.startswith("#1/") and raw[3:].isdigit() and int(raw[3:]) <= size:
            n = int(raw[3:])
            name = bytes(buf[data:data + n]).rstrip(b"\0").decode("utf-8", "replace")
            yield name, data + n, length - n
        elif raw not in ("/", "/SYM64/", "__.SYMDEF", "__.SYMDEF SORTED"):
            if raw.startswith("/") and raw[1:].isdigit():
                start = int(raw[1:])
                name = long_names[start:long_names.find(b"/\n", start)].decode("utf-8", "replace")
            else:
                name = raw.rstrip("/")
            yield name, data, length
        pos = data + size + (size & 1)
