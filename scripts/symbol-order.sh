#!/bin/bash
# usage: scripts/symbol-order.sh BINARY > apiserver/symbol-order.txt
# Lists the functions of a release `kspaces` BINARY that a server runs (1) when it first starts on a fresh data dir
# and answers /readyz, then (2) when it restarts on that data dir and serves a few kubectl requests, in that
# order: what apiserver/build.rs asks the linker to lay out first. Runs the server under valgrind's callgrind
# (slow: a minute or two), dumping its counts once the requests are answered.
set -euo pipefail
HERE=$(dirname "$(readlink -f "$0")")
BIN=$(readlink -f "$1")
KUBECTL=${KUBECTL:-$(dirname "$(readlink -f "$(command -v kubectl)")")/kubectl.1.32}
DIR=$(mktemp -d)
trap 'pkill -INT -f "callgrind.*$DIR" || true; sleep 2; [ -n "${KEEP:-}" ] || rm -rf "$DIR"' EXIT
# The tunable kspaces would add by starting itself again (apiserver/src/platform.rs), so that it does not.
export GLIBC_TUNABLES=glibc.cpu.x86_rep_movsb_threshold=1099511627776

# run NAME COMMANDS...: the server under callgrind on $DIR/d, the commands once it serves, then a dump.
run() {
  local name=$1; shift
  valgrind --tool=callgrind --demangle=no --callgrind-out-file="$DIR/$name.out" "$BIN" serve --data-dir "$DIR/d" \
    --secure-port 0 > "$DIR/$name.log" 2>&1 &
  local pid=$!
  for _ in $(seq 120); do grep -q "serving on" "$DIR/$name.log" && break; sleep 1; done
  "$@"
  sleep 2
  # The counts so far, to $name.out.1 (the server's shutdown is left out).
  callgrind_control -d "$pid" > /dev/null
  sleep 2
  kill -INT "$pid"
  wait || true
}
readyz() {
  local url; url=$(grep -o "https://[0-9.:]*" "$DIR/first.log" | head -1)
  "$HERE/admin-certs.sh" "$DIR/d/admin.kubeconfig" "$DIR"
  curl -sk --cert "$DIR/c.pem" --key "$DIR/k.pem" -o /dev/null "$url/readyz"
}
requests() {
  local k="$KUBECTL --kubeconfig $DIR/d/admin.kubeconfig --cache-dir $DIR/cache --request-timeout 120s"
  $k get namespaces > /dev/null
  $k create configmap x --from-literal=a=b > /dev/null
  $k get configmaps -A > /dev/null
  $k get configmap x -o json > /dev/null
  $k delete configmap x > /dev/null
}
run first readyz
run restart requests

echo "# The kspaces binary's functions in the order a release build lays them out first (apiserver/build.rs): those run"
echo "# by a first start and its first /readyz, then those run by a restart and a few kubectl requests. Written by"
echo "# scripts/symbol-order.sh from callgrind runs of a release build; names absent from a later build are skipped."
# What the names' hashes depend on: the toolchain, the Cargo.lock entries of the packages kspaces-apiserver reaches
# and the manifests. tests/tests/symbol_order.rs computes it the same way and fails when today's differs.
python3 - "$(rustc --version)" "$HERE/.." <<'PY'
import sys
rustc, root = sys.argv[1].strip(), sys.argv[2]
manifests = ["Cargo.toml", "apiserver/Cargo.toml", "storage/Cargo.toml", "crd/Cargo.toml", "authz/Cargo.toml"]
packages = []
for block in open(f"{root}/Cargo.lock").read().split("[[package]]")[1:]:
    field = lambda key: next((l[len(key):] for l in block.splitlines() if l.startswith(key)), "").strip('"')
    deps = block.split("dependencies = [")[1].split("]")[0] if "dependencies = [" in block else ""
    deps = [d.strip().rstrip(",").strip('"') for d in deps.splitlines()]
    entry = "\n".join(l.strip() for l in block.splitlines() if l.strip())
    packages.append((f"{field('name = ')} {field('version = ')}", entry, [d for d in deps if d]))
def find(wanted):
    words = wanted.split()
    name, version = words[0], (words[1] if len(words) > 1 else None)
    return next((i for i, (id, _, _) in enumerate(packages) if id.split(" ")[0] == name and version in (None, id.split(" ")[1])), None)
reached, pending = {}, [i for i in [find("kspaces-apiserver")] if i is not None]
while pending:
    id, entry, deps = packages[pending.pop()]
    if id not in reached:
        reached[id] = entry
        pending.extend(j for j in map(find, deps) if j is not None)
text = "\n".join([rustc] + [reached[id] for id in sorted(reached)] + [open(f"{root}/{m}").read() for m in manifests])
h = 0xcbf29ce484222325
for byte in text.encode():
    h = ((h ^ byte) * 0x100000001b3) % (1 << 64)
print(f"# fingerprint: {h:016x} ({rustc}; Cargo.lock and the manifests, tests/tests/symbol_order.rs)")
PY
# Callgrind names each object and function once, as `ob=(n) name` / `fn=(n) name`, and by number after; `cob=`
# and `cfn=` name the object and function called. Every function of the binary that ran, in first-seen order.
python3 - "$BIN" "$DIR/first.out.1" "$DIR/restart.out.1" <<'PY'
import re, sys
binary, seen = sys.argv[1], set()
line_re = re.compile(r'(ob|cob|fn|cfn)=\((\d+)\)(?: (.*))?$')
for path in sys.argv[2:]:
    objects, functions, current, called = {}, {}, None, None
    for line in open(path, errors="replace"):
        match = line_re.match(line.rstrip("\n"))
        if not match:
            continue
        kind, number, name = match.groups()
        if kind in ("ob", "cob"):
            if name:
                objects[number] = name
            if kind == "ob":
                current = called = objects.get(number)
            else:
                called = objects.get(number)
            continue
        if name:
            functions[number] = name
        function = functions.get(number)
        in_binary = (current if kind == "fn" else called) == binary
        if kind == "fn":
            called = current
        if in_binary and function and not function.startswith("0x") and function not in seen:
            seen.add(function)
            print(function)
PY
