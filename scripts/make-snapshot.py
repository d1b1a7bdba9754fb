#!/usr/bin/env python3
"""Writes a kspaces snapshot (docs/operations.md, format version 1) of N ConfigMaps, for benchmarks.

Written from the format's description alone, so it also checks that the description is enough to write a file
`kspaces snapshot inspect` accepts.

    scripts/make-snapshot.py FILE [N] [SPACES]
"""
import hashlib
import json
import struct
import sys

MAGIC = b"\x89KSNAP\r\n"
CHUNK_BYTES = 1024 * 1024


def main():
    path = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    spaces = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    revision = count
    whole = hashlib.sha256()
    totals = {"chunks": 0, "records": 0, "bytes": 0}
    with open(path, "wb") as out:
        header = MAGIC + struct.pack(">HHQ", 1, 1, revision)
        out.write(header)
        whole.update(header)
        payload, items = bytearray(), 0

        def flush():
            nonlocal payload, items
            if not items:
                return
            frame = struct.pack(">BII", ord("R"), items, len(payload))
            digest = hashlib.sha256(payload).digest()
            out.write(frame + payload + digest)
            whole.update(frame + digest)
            totals["chunks"] += 1
            payload, items = bytearray(), 0

        for n in range(1, count + 1):
            space = f"t{n % spaces}"
            name = f"cm-{n:08d}"
            key = f"/registry/core/configmaps/builtin/{space}/default/{name}".encode()
            value = json.dumps({
                "metadata": {"name": name, "namespace": "default", "uid": f"00000000-0000-4000-8000-{n:012d}",
                             "creationTimestamp": "2026-11-01T00:00:00Z", "labels": {"app": "bench", "n": str(n)}},
                "apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v" * 400},
            }, separators=(",", ":")).encode()
            payload += struct.pack(">I", len(key)) + key + struct.pack(">QQ", n, n) + struct.pack(">I", len(value)) + value
            items += 1
            totals["records"] += 1
            totals["bytes"] += len(key) + len(value)
            if len(payload) >= CHUNK_BYTES:
                flush()
        flush()
        trailer = struct.pack(">BIQIQ", ord("T"), totals["chunks"], totals["records"], 0, totals["bytes"])
        whole.update(trailer)
        out.write(trailer + whole.digest())


if __name__ == "__main__":
    main()
