#!/usr/bin/env bash
# Runs the whole kspaces test suite: unit tests, the storage conformance suite on memory, sled and a real
# etcd, the property and kill -9 tests, and the black-box tests that drive the real binary with kubectl 1.32,
# kube-rs and the Python client, then each fuzz target for a bounded time. Installs what the tests need when it is
# missing (etcd-server, a venv at .venv/ with the pinned Python `kubernetes` client and `kopf`, the npm `oidc-provider` in
# tests/oidc/node_modules, cargo-fuzz); under CI=true anything it cannot provide is a failure, never a skip. Nothing needs protoc: the etcd client's gRPC code is checked
# in (storage/src/etcd/proto).
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "test-all: $*" >&2; exit 1; }

need_apt=()
command -v etcd >/dev/null 2>&1 || need_apt+=(etcd-server)
if ((${#need_apt[@]})); then
  echo "test-all: installing ${need_apt[*]}"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null \
    || fail "could not install ${need_apt[*]}"
fi
command -v etcd >/dev/null 2>&1 || fail "etcd is missing (Debian: etcd-server)"

if [ -z "${KUBECTL:-}" ]; then
  dispatcher="$(readlink -f "$(command -v kubectl 2>/dev/null || echo /nonexistent)" || true)"
  KUBECTL="$(dirname "$dispatcher")/kubectl.1.32"
  export KUBECTL
fi
[ -x "$KUBECTL" ] || fail "kubectl 1.32 not found (looked for $KUBECTL; set KUBECTL)"

# The Python client the black-box tests drive (tests/tests/python_client.rs reads KSPACES_PYTHON), and the kopf
# operator framework (tests/tests/kopf_operator.rs).
PYTHON_CLIENT_VERSION=37.0.2
KOPF_VERSION=1.45.2
venv_ready() {
  .venv/bin/python -c "import sys, kubernetes, kopf
from importlib.metadata import version
sys.exit(not (kubernetes.__version__ == '$PYTHON_CLIENT_VERSION' and version('kopf') == '$KOPF_VERSION'))" 2>/dev/null
}
if ! venv_ready; then
  echo "test-all: preparing .venv with kubernetes==$PYTHON_CLIENT_VERSION kopf==$KOPF_VERSION"
  command -v python3 >/dev/null 2>&1 || fail "python3 is missing (Debian: python3 python3-venv)"
  if ! python3 -m venv .venv >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv >/dev/null \
      || fail "could not install python3-venv"
    python3 -m venv .venv || fail "could not create .venv"
  fi
  .venv/bin/pip install -q "kubernetes==$PYTHON_CLIENT_VERSION" "kopf==$KOPF_VERSION" \
    || fail "could not install the Python kubernetes client and kopf into .venv"
  venv_ready || fail ".venv lacks kubernetes==$PYTHON_CLIENT_VERSION or kopf==$KOPF_VERSION after installing them"
fi
export KSPACES_PYTHON="$PWD/.venv/bin/python"

# The OpenID provider tests/tests/oidc.rs signs in with: the npm `oidc-provider` pinned by tests/oidc/package-lock.json,
# installed into tests/oidc/node_modules.
oidc_ready() { [ -f tests/oidc/node_modules/oidc-provider/package.json ] && [ -f tests/oidc/node_modules/jose/package.json ]; }
if ! oidc_ready; then
  echo "test-all: installing the OpenID provider into tests/oidc/node_modules"
  if ! command -v npm >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >/dev/null \
      || fail "could not install nodejs and npm"
  fi
  (cd tests/oidc && npm ci --no-audit --no-fund --loglevel=error) || fail "could not install tests/oidc (npm ci)"
  oidc_ready || fail "tests/oidc/node_modules has no oidc-provider after npm ci"
fi

cargo build --workspace --bins
# The black-box tests run the binary built just above, not a rebuild of their own.
export KSPACES_BIN="${CARGO_TARGET_DIR:-$PWD/target}/debug/kspaces"
cargo test --workspace --no-fail-fast
# The benchmarks (`cargo bench`) are not run here, but they must still build: in the dev profile, beside the tests'
# artifacts, so this costs only their own compilation.
cargo build --workspace --benches

# The fuzz targets (tests/fuzz; docs/limits.md, "Fuzzing"): libFuzzer through cargo-fuzz, each target run for
# FUZZ_SECONDS from its committed corpus, new inputs kept in a scratch directory; a crash, a timeout or running out
# of memory fails the run, and the input is saved in tests/fuzz/artifacts/<target>/. cargo-fuzz passes rustc
# nightly-only flags: RUSTC_BOOTSTRAP=1 lets the stable toolchain take them. No sanitizer: the server is safe Rust,
# and AddressSanitizer would slow both the build and the runs to watch unsafe code that is not ours.
FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "test-all: installing cargo-fuzz"
  cargo install cargo-fuzz --locked || fail "could not install cargo-fuzz"
fi
cargo fuzz --version >/dev/null 2>&1 || fail "cargo-fuzz is missing after installing it"
export RUSTC_BOOTSTRAP=1
cargo fuzz build --fuzz-dir tests/fuzz --sanitizer none || fail "the fuzz targets do not build"
fuzz_scratch="$(mktemp -d)"
trap 'rm -rf "$fuzz_scratch"' EXIT
for target in $(cargo fuzz list --fuzz-dir tests/fuzz); do
  echo "test-all: fuzzing $target for ${FUZZ_SECONDS}s"
  mkdir -p "$fuzz_scratch/$target"
  # libFuzzer logs every input that adds coverage: its log is shown only when the target fails.
  if ! cargo fuzz run --fuzz-dir tests/fuzz --sanitizer none "$target" "$fuzz_scratch/$target" "tests/fuzz/corpus/$target" \
    -- -max_total_time="$FUZZ_SECONDS" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 >"$fuzz_scratch/$target.log" 2>&1; then
    tail -n 60 "$fuzz_scratch/$target.log" >&2
    fail "fuzz target $target failed: the input is in tests/fuzz/artifacts/$target/"
  fi
  grep -E '^(Done|stat::peak_rss_mb)' "$fuzz_scratch/$target.log" || true
done
