#!/bin/bash
# usage: scripts/lone-write-latency.sh BINARY [BINARY ...] — one client's durable ConfigMap creates and GETs, one
# kept-alive HTTPS/1.1 connection (Python's http.client), back to back and then with a pause between requests
# (5 ms, 50 ms: the idle server a lone kubectl meets). A fresh sled server per binary; binaries interleaved, two
# rounds. Prints p50 / p99 per binary and pause.
DIR=${DIR:-/tmp/kspaces-lone-writes}
mkdir -p $DIR
cat > $DIR/lone.py <<'EOF'
import base64, http.client, json, re, ssl, sys, time
dir, port, verb, gap, n, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
config = open(dir + "/d/admin.kubeconfig").read()
for field, name in [("certificate-authority-data", "ca.pem"), ("client-certificate-data", "c.pem"), ("client-key-data", "k.pem")]:
    open(dir + "/" + name, "wb").write(base64.b64decode(re.search(field + r": (\S+)", config).group(1)))
ctx = ssl.create_default_context(cafile=dir + "/ca.pem")
ctx.load_cert_chain(dir + "/c.pem", dir + "/k.pem")
conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx)
times = []
for i in range(n):
    start = time.perf_counter()
    if verb == "create":
        body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{tag}-{i}"}, "data": {"d": "x" * 1000}})
        conn.request("POST", "/api/v1/namespaces/default/configmaps", body, {"Content-Type": "application/json"})
    else:
        conn.request("GET", f"/api/v1/namespaces/default/configmaps/{tag}-{i % 100}")
    response = conn.getresponse(); response.read()
    times.append(time.perf_counter() - start)
    assert response.status in (200, 201), response.status
    if gap:
        time.sleep(gap)
times.sort()
print(f"{verb} pause {gap * 1000:.0f} ms: p50 {times[n // 2] * 1000:.2f} / p99 {times[int(n * 0.99)] * 1000:.2f} ms")
EOF
for round in 1 2; do
  for BIN in "$@"; do
    pkill -f "serve --data-dir $DIR/d"; sleep 0.5; rm -rf $DIR/d
    setsid $BIN serve --data-dir $DIR/d --secure-port 0 > $DIR/log 2>&1 & sleep 2
    PORT=$(grep -o "https://[0-9.]*:[0-9]*" $DIR/log | head -1 | sed 's/.*://')
    echo "$(basename $BIN), round $round:"
    python3 $DIR/lone.py $DIR $PORT create 0 500 a
    python3 $DIR/lone.py $DIR $PORT create 0.005 300 b
    python3 $DIR/lone.py $DIR $PORT create 0.05 100 c
    python3 $DIR/lone.py $DIR $PORT get 0 1000 a
    python3 $DIR/lone.py $DIR $PORT get 0.05 100 a
  done
done
pkill -f "serve --data-dir $DIR/d"
