#!/usr/bin/env python3
"""Copies a tenant snapshot (docs/operations.md, version 1) adding N ConfigMaps in the tenant's space, for benchmarks.

    scripts/enlarge-tenant-snapshot.py FROM TO TENANT N
"""
import hashlib, json, struct, sys

src, dst, tenant, extra = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
data = open(src, "rb").read()
header = data[:20]
pos = 20
chunks = []  # (kind, items, payload)
while data[pos:pos + 1] != b"T":
    kind, items, length = struct.unpack(">BII", data[pos:pos + 9])
    chunks.append((kind, items, data[pos + 9:pos + 9 + length]))
    pos += 9 + length + 32
whole = hashlib.sha256(header)
totals = {"chunks": 0, "records": 0, "files": 0, "bytes": 0}
out = open(dst, "wb")
out.write(header)

def emit(kind, items, payload):
    frame = struct.pack(">BII", kind, items, len(payload))
    digest = hashlib.sha256(payload).digest()
    out.write(frame + payload + digest)
    whole.update(frame + digest)
    totals["chunks"] += 1

def record_bytes(payload):
    p, n = 0, 0
    while p < len(payload):
        (klen,) = struct.unpack(">I", payload[p:p + 4]); p += 4 + klen + 16
        (vlen,) = struct.unpack(">I", payload[p:p + 4]); p += 4 + vlen
        n += klen + vlen
    return n

for kind, items, payload in chunks:
    emit(kind, items, payload)
    if kind == ord("F"):
        totals["files"] += 1
    else:
        totals["records"] += items
        totals["bytes"] += record_bytes(payload)
payload, items = bytearray(), 0
for n in range(extra):
    name = f"x-{n:08d}"
    key = f"/registry/core/configmaps/builtin/{tenant}/default/{name}".encode()
    value = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default",
        "uid": f"00000000-0000-4000-8000-{n:012d}", "creationTimestamp": "2026-11-01T00:00:00Z"}, "data": {"k": "v" * 400}},
        separators=(",", ":")).encode()
    payload += struct.pack(">I", len(key)) + key + struct.pack(">QQ", 1, 1) + struct.pack(">I", len(value)) + value
    items += 1
    totals["records"] += 1
    totals["bytes"] += len(key) + len(value)
    if len(payload) >= 1024 * 1024:
        emit(ord("R"), items, bytes(payload)); payload, items = bytearray(), 0
if items:
    emit(ord("R"), items, bytes(payload))
trailer = struct.pack(">BIQIQ", ord("T"), totals["chunks"], totals["records"], totals["files"], totals["bytes"])
whole.update(trailer)
out.write(trailer + whole.digest())
