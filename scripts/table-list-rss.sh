#!/bin/bash
# usage: [ACCEPT=<media type>] [LISTS=n] scripts/table-list-rss.sh BINARY — a sled server holding 10,000 1-KiB
# ConfigMaps; LISTS (default 5) lists (no limit) with curl, as a Table unless ACCEPT names another form (e.g.
# application/json, application/vnd.kubernetes.protobuf); the server's RSS and its CPU per list.
BIN=$1
HERE=$(dirname "$(readlink -f "$0")")
DIR=${DIR:-/tmp/kspaces-table-bench}
mkdir -p $DIR
cd $DIR; pkill -f "serve --data-dir $DIR/d" ; sleep 0.5
if [ ! -d d ]; then
  setsid $BIN serve --data-dir $DIR/d --secure-port 0 > log 2>&1 & sleep 2
  K="${KUBECTL:-kubectl} --kubeconfig d/admin.kubeconfig --cache-dir $DIR/cache"
  python3 -c '
import json
pad="x"*1000
print(json.dumps({"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%05d"%i,"namespace":"default"},"data":{"k":pad}} for i in range(10000)]}))' > list.json
  $K create -f list.json > /dev/null
  pkill -f "serve --data-dir $DIR/d"; sleep 1
fi
setsid $BIN serve --data-dir $DIR/d --secure-port 0 > log 2>&1 & sleep 2
P=$(pgrep -f "serve --data-dir $DIR/d")
URL=$(grep -o "https://[0-9.:]*" log | head -1)
"$HERE/admin-certs.sh" d/admin.kubeconfig .
curl -sk --cert c.pem --key k.pem -o /dev/null $URL/api/v1/namespaces/default/configmaps?limit=1
echo 5 > /proc/$P/clear_refs
before=$(grep VmRSS /proc/$P/status | awk '{print $2}')
ticks_before=$(awk '{print $14 + $15}' /proc/$P/stat)
times=""
for i in $(seq ${LISTS:-5}); do
  # Only the last answer is written to a file (to count its rows): writing 15 MB to disk took curl longer than the list.
  out=/dev/null; [ $i = ${LISTS:-5} ] && out=$DIR/out.json
  times="$times $(curl -sk --http1.1 --cert c.pem --key k.pem -H "Accept: ${ACCEPT:-application/json;as=Table;v=v1;g=meta.k8s.io}" -o $out -w '%{time_total}' $URL/api/v1/namespaces/default/configmaps)"
done
peak=$(grep VmHWM /proc/$P/status | awk '{print $2}'); after=$(grep VmRSS /proc/$P/status | awk '{print $2}')
cpu=$(( ($(awk '{print $14 + $15}' /proc/$P/stat) - ticks_before) * 1000 / $(getconf CLK_TCK) / ${LISTS:-5} ))
rows=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["rows"]))' $DIR/out.json 2>/dev/null || echo "-")
echo "$(basename $BIN): RSS before $((before/1024)) MiB, peak $((peak/1024)) MiB, after $((after/1024)) MiB; server CPU per list $cpu ms; times:$times; rows $rows; bytes $(stat -c %s $DIR/out.json)"
pkill -f "serve --data-dir $DIR/d"; sleep 0.5
