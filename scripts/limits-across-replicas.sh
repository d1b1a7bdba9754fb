#!/bin/bash
# usage: [N=6400] [P=32] scripts/limits-across-replicas.sh BINARY LABEL — one etcd member and two replicas of BINARY on
# it; N creates of small ConfigMaps into tenant `lim`, P sequential curl clients (each one kept-alive HTTP/1.1
# connection) split between the replicas: first unlimited (twice: a warm-up, then measured), then with an object
# limit far above what it stores, so every write goes through the space's tally (docs/quotas.md, "Several replicas
# on one etcd"). Prints the rates and each replica's `status.quota`. Ports 16443-16444 and 23790/23800.
set -u
BIN=$1; LABEL=$2; N=${N:-6400}; P=${P:-32}
D=$(mktemp -d /tmp/kspaces-limits.XXXX)
etcd --data-dir $D/etcd --listen-client-urls http://127.0.0.1:23790 --advertise-client-urls http://127.0.0.1:23790 \
  --listen-peer-urls http://127.0.0.1:23800 --initial-advertise-peer-urls http://127.0.0.1:23800 \
  --initial-cluster default=http://127.0.0.1:23800 --max-request-bytes=4194304 >$D/etcd.log 2>&1 &
EP=$!
sleep 1.5
printf 'root-token,root,u-root,"system:masters"\n' > $D/tokens.csv
mkdir -p $D/k
start() { $BIN serve --data-dir $D/k --secure-port $1 --storage-backend etcd --etcd-servers http://127.0.0.1:23790 --token-auth-file $D/tokens.csv >$D/r$1.log 2>&1 & echo $!; }
R1=$(start 16443); sleep 1.5; R2=$(start 16444); sleep 1.5
c() { curl -sk -H "Authorization: Bearer root-token" "$@"; }
c -X POST -H 'Content-Type: application/json' https://127.0.0.1:16443/api/v1/tenants -d '{"apiVersion":"v1","kind":"Tenant","metadata":{"name":"lim"}}' -o /dev/null
sleep 1
echo '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"x-"},"data":{"v":"0123456789012345678901234567890123456789"}}' > $D/cm.json
cfg() { for i in $(seq 1 $2); do printf 'url = "https://127.0.0.1:%s/clusters/root:lim/api/v1/namespaces/default/configmaps"\nrequest = "POST"\nheader = "Content-Type: application/json"\nheader = "Authorization: Bearer root-token"\ndata = "@%s"\noutput = "/dev/null"\ninsecure\nsilent\nhttp1.1\nwrite-out = "%%{http_code} %%{errormsg}\\n"\nnext\n' $1 $D/cm.json; done > $D/cfg-$1-$3; }
load() { # name: P/2 sequential curls per replica, each over one kept-alive connection
  local per=$((N/P))
  cfg 16443 $per $1; cfg 16444 $per $1
  local t0=$(date +%s.%N)
  for j in $(seq 1 $((P/2))); do
    curl -K $D/cfg-16443-$1 > $D/codes-a-$1-$j & curl -K $D/cfg-16444-$1 > $D/codes-b-$1-$j &
  done
  wait $(jobs -p | grep -v "^$EP$\|^$R1$\|^$R2$")
  local t1=$(date +%s.%N)
  local ok=$(cat $D/codes-*-$1-* | grep -c '^201 ')
  echo "$LABEL $1: $ok/$N created in $(echo "$t1 - $t0" | bc) s = $(echo "$ok / ($t1 - $t0)" | bc)/s; other codes: $(cat $D/codes-*-$1-* | grep -v '^201 ' | sort | uniq -c | tr '\n' ' ')"
}
load warm
load unlimited
c -X PATCH -H 'Content-Type: application/merge-patch+json' https://127.0.0.1:16443/clusters/root:lim/apis/core.kcp.io/v1alpha1/logicalclusters/cluster -d '{"metadata":{"annotations":{"core.kcp.io/max-total-objects":"1000000000"}}}' -o /dev/null
sleep 1
c https://127.0.0.1:16443/clusters/root:lim/apis/core.kcp.io/v1alpha1/logicalclusters/cluster | python3 -c 'import json,sys; print("status.quota:", json.load(sys.stdin)["status"].get("quota"))'
load limited
c https://127.0.0.1:16444/clusters/root:lim/apis/core.kcp.io/v1alpha1/logicalclusters/cluster | python3 -c 'import json,sys; print("status.quota on replica 2:", json.load(sys.stdin)["status"].get("quota"))'
kill $R1 $R2 $EP; wait 2>/dev/null
rm -rf $D
