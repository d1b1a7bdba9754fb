#!/usr/bin/env python3
"""Writes COUNT ConfigMaps straight into etcd (its JSON gateway, `/v3/kv/txn`, 100 puts per transaction), in the
stored form kspaces writes (`metadata` first, no resourceVersion), under namespace NAMESPACE of space SPACE (the
system space by default; a tenant's name for a tenant's space).
For the restart-over-many-objects benchmark (docs/benchmarks.md, "Scale-out on etcd"): filling through the API
runs at the API's create rate (about 550/s on etcd on the 2-core machine), this at etcd's.

usage: scripts/fill-etcd.py ENDPOINT COUNT [NAMESPACE] [SPACE] [PREFIX]
"""
import base64
import json
import sys
import threading
import time
import urllib.request
import uuid

endpoint, count = sys.argv[1], int(sys.argv[2])
namespace = sys.argv[3] if len(sys.argv) > 3 else "bench-fill"
space = sys.argv[4] if len(sys.argv) > 4 else "system"
prefix = sys.argv[5] if len(sys.argv) > 5 else "/registry"
BATCH, THREADS = 100, 8
padding = "x" * 400


def b64(text):
    return base64.b64encode(text.encode()).decode()


def value(i):
    metadata = {"name": f"cm-{i}", "namespace": namespace, "uid": str(uuid.uuid4()),
                "creationTimestamp": "2026-11-27T00:00:00Z", "annotations": {"kcp.io/cluster": "root" if space == "system" else space}}
    if space != "system":
        metadata["tenant"] = space
    return json.dumps({
        "metadata": metadata,
        "apiVersion": "v1", "kind": "ConfigMap", "data": {"k": padding},
    }, separators=(",", ":"))


def worker(start, stop):
    for first in range(start, stop, BATCH):
        ops = [{"requestPut": {"key": b64(f"{prefix}/core/configmaps/builtin/{space}/{namespace}/cm-{i}"), "value": b64(value(i))}}
               for i in range(first, min(first + BATCH, stop))]
        body = json.dumps({"success": ops}).encode()
        request = urllib.request.Request(f"{endpoint}/v3/kv/txn", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request) as answer:
            answer.read()


began = time.time()
share = (count + THREADS - 1) // THREADS
threads = [threading.Thread(target=worker, args=(t * share, min(count, (t + 1) * share))) for t in range(THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
took = time.time() - began
print(f"{count} ConfigMaps written in {took:.1f} s ({count / took:.0f}/s)")
