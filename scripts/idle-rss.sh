#!/bin/bash
# usage: [ROUNDS=n] scripts/idle-rss.sh BINARY... — starts each BINARY on a fresh data dir, ROUNDS times (default 3),
# interleaved, as the API bench measures "idle RSS after start": once /readyz answers (curl with the admin's
# certificate), one second later. Prints VmRSS and its anonymous and file-backed parts, and the binary's resident
# code (the Rss of its executable mapping).
set -euo pipefail
HERE=$(dirname "$(readlink -f "$0")")
DIR=$(mktemp -d)
trap 'pkill -f "serve --data-dir $DIR/" || true; rm -rf "$DIR"' EXIT
for round in $(seq "${ROUNDS:-3}"); do
  for bin in "$@"; do
    data="$DIR/d-$round-$(basename "$bin")"
    setsid "$bin" serve --data-dir "$data" --secure-port 0 > "$DIR/log" 2>&1 &
    for _ in $(seq 100); do grep -q "serving on" "$DIR/log" && break; sleep 0.1; done
    url=$(grep -o "https://[0-9.:]*" "$DIR/log" | head -1)
    "$HERE/admin-certs.sh" "$data/admin.kubeconfig" "$DIR"
    curl -sk --cert "$DIR/c.pem" --key "$DIR/k.pem" -o /dev/null "$url/readyz"
    sleep 1
    pid=$(pgrep -f "serve --data-dir $data")
    field() { awk -v f="$1:" '$1 == f {printf "%.1f", $2 / 1024}' "/proc/$pid/status"; }
    code=$(awk -v exe="$(readlink -f "/proc/$pid/exe")" '
      /^[0-9a-f]+-[0-9a-f]+ / {text = ($2 ~ /x/ && $6 == exe)}
      text && $1 == "Rss:" {kib += $2} END {printf "%.1f", kib / 1024}' "/proc/$pid/smaps")
    echo "round $round $(basename "$bin"): VmRSS $(field VmRSS) MiB (anon $(field RssAnon), file $(field RssFile)); code resident $code MiB"
    kill "$pid"; sleep 0.5
  done
done
