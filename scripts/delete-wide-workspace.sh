#!/bin/bash
# usage: scripts/delete-wide-workspace.sh BINARY [N=2000] — starts BINARY (`serve`, sled, port 6555) on a fresh data
# dir, makes tenant `t-w` with a workspace `wide` holding N empty child workspaces (8 curl clients), then deletes
# `wide` and prints how long it took until its GET answers 404 (docs/benchmarks.md, "Deleting a tree, fifth pass").
set -euo pipefail
HERE=$(dirname "$(readlink -f "$0")")
BIN=$1; N=${2:-2000}; D=$(mktemp -d)
"$BIN" serve --data-dir "$D/data" --secure-port 6555 > "$D/log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -rf "$D"' EXIT
for _ in $(seq 50); do [ -f "$D/data/admin.kubeconfig" ] && break; sleep 0.1; done
KC=$D/data/admin.kubeconfig
"$HERE/admin-certs.sh" "$KC" "$D"
export C="curl -sk --cert $D/c.pem --key $D/k.pem" U=https://127.0.0.1:6555
ws() { echo "{\"apiVersion\":\"tenancy.kcp.io/v1alpha1\",\"kind\":\"Workspace\",\"metadata\":{\"name\":\"$1\"},\"spec\":{\"type\":{\"name\":\"$2\",\"path\":\"root\"}}}"; }
export -f ws
WORKSPACES=apis/tenancy.kcp.io/v1alpha1/workspaces
$C -o /dev/null -X POST -H 'Content-Type: application/json' "$U/clusters/root/$WORKSPACES" -d "$(ws t-w organization)"
sleep 1
$C -o /dev/null -X POST -H 'Content-Type: application/json' "$U/clusters/root:t-w/$WORKSPACES" -d "$(ws wide universal)"
sleep 1
seq 1 "$N" | xargs -P 8 -I{} bash -c '$C -o /dev/null -X POST -H "Content-Type: application/json" "$U/clusters/root:t-w:wide/'"$WORKSPACES"'" -d "$(ws c{} universal)"'
sleep 3
made=$($C "$U/clusters/root:t-w:wide/$WORKSPACES" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')
start=$(date +%s.%N)
$C -o /dev/null -X DELETE "$U/clusters/root:t-w/$WORKSPACES/wide"
while [ "$($C -o /dev/null -w '%{http_code}' "$U/clusters/root:t-w/$WORKSPACES/wide")" != 404 ]; do sleep 0.05; done
end=$(date +%s.%N)
echo "$(basename "$BIN"): $made children; deleted in $(python3 -c "print(round($end - $start, 2))") s"
