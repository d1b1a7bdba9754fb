#!/bin/bash
# usage: scripts/memcpy-offsets.sh — glibc's memcpy speed on this machine by copy size and by how far the destination
# lies past the source modulo 4 KiB, as it is and with the tunable `kspaces serve` sets on AMD processors
# (apiserver/src/platform.rs). Needs a C compiler (cc), as cargo's build of ring does.
set -euo pipefail
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/copy.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
int main(int argc, char **argv) {
    size_t size = (size_t)atoi(argv[1]) * 1024, past = (size_t)atoi(argv[2]);
    char *src = aligned_alloc(4096, size + 4096), *dst = aligned_alloc(4096, size + 4096);
    memset(src, 1, size + 4096);
    memset(dst, 2, size + 4096);
    long rounds = (1L << 31) / (long)size;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < rounds; i++) {
        memcpy(dst + past, src, size);
        src[i % size]++;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("%.1f", (double)rounds * (double)size / seconds / 1e9);
    return 0;
}
C
cc -O2 -o "$dir/copy" "$dir/copy.c"
tunable=glibc.cpu.x86_rep_movsb_threshold=1099511627776
echo "| copy size | destination past the source (mod 4 KiB) | GB/s, glibc as it is | GB/s, $tunable |"
echo "|---|---|---|---|"
for size in 8 16 64 256 1024; do
  for past in 0 5 16 64; do
    plain=$(env -u GLIBC_TUNABLES "$dir/copy" $size $past)
    tuned=$(GLIBC_TUNABLES=$tunable "$dir/copy" $size $past)
    echo "| $size KiB | $past B | $plain | $tuned |"
  done
done
