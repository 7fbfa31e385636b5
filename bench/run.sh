#!/bin/sh
# Runs every benchmark program and collects their `bench:` lines into reports/bench/latest.txt.
set -u
build=${1:-build}
out=reports/bench
mkdir -p "$out"
tmp="$out/latest.txt.tmp"
: > "$tmp"
status=0
{
    echo "# syncroll bench $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -m) $(nproc) cores"
    grep -m1 'model name' /proc/cpuinfo | sed 's/^/# /'
} >> "$tmp"
found=0
for b in "$build"/bench/bench_*; do
    [ -x "$b" ] || continue
    found=1
    echo "== $(basename "$b")"
    "$b" | tee -a "$tmp" || status=1
done
if [ "$found" = 0 ]; then
    echo "no benchmark programs were built under $build/bench" >&2
    status=1
fi
mv "$tmp" "$out/latest.txt"
echo "wrote $out/latest.txt"
exit $status
