#!/usr/bin/env python3
"""GETs ConfigMap b-0 of the tenant KUBECONFIG names (a client certificate) for SECONDS, one request at a time over one
connection, and prints p50, p99 and max (docs/benchmarks.md, a tenant restore's effect on another tenant).

    scripts/tenant-get-latency.py KUBECONFIG SECONDS   (needs PyYAML)
"""
import http.client, ssl, sys, time, yaml, base64, tempfile, os
kubeconfig, seconds = sys.argv[1], float(sys.argv[2])
cfg = yaml.safe_load(open(kubeconfig))
cluster, user = cfg["clusters"][0]["cluster"], cfg["users"][0]["user"]
d = tempfile.mkdtemp()
def put(name, b64):
    p = os.path.join(d, name); open(p, "wb").write(base64.b64decode(b64)); return p
ctx = ssl.create_default_context(cafile=put("ca", cluster["certificate-authority-data"]))
ctx.load_cert_chain(put("crt", user["client-certificate-data"]), put("key", user["client-key-data"]))
host = cluster["server"].split("//")[1].split("/")[0]
conn = http.client.HTTPSConnection(host, context=ctx)
lat, errors, end = [], 0, time.time() + seconds
while time.time() < end:
    t = time.perf_counter()
    conn.request("GET", "/api/v1/namespaces/default/configmaps/b-0")
    r = conn.getresponse(); r.read()
    lat.append((time.perf_counter() - t) * 1000)
    if r.status != 200: errors += 1
lat.sort()
q = lambda f: lat[min(len(lat) - 1, int(f * len(lat)))]
print(f"{len(lat)} GETs, {errors} errors, p50 {q(0.5):.2f} ms, p99 {q(0.99):.2f} ms, max {lat[-1]:.2f} ms")
