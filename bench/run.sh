#!/bin/sh
# Runs every benchmark program, collects their `bench:` lines into reports/bench/latest.txt, then
# bench/collect.py writes reports/bench/latest.json (machine, every line parsed, the targets of
# bench/targets.txt judged) and prints the targets table. A MISS does not fail; a benchmark
# program that fails (crash, wrong result) makes the exit status 1. See bench/README.md.
set -u
build=${1:-build}
here=$(dirname "$0")
out=reports/bench
mkdir -p "$out"
tmp="$out/latest.txt.tmp"
: > "$tmp"
# Debian's python3 (with python3-numpy, `make deps`) runs the Python baseline and the collector.
py=${BENCH_PYTHON:-/usr/bin/python3}
[ -x "$py" ] || py=python3
export BENCH_PYTHON="$py"
status=0
start=$(date +%s)
{
    echo "# syncroll bench $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -m) $(nproc) cores"
    grep -m1 'model name' /proc/cpuinfo | sed 's/^/# /'
    echo "# loadavg start $(cat /proc/loadavg)"
} >> "$tmp"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
found=0
for b in "$build"/bench/bench_*; do
    [ -x "$b" ] || continue
    found=1
    name=$(basename "$b")
    echo "== $name" | tee -a "$tmp"
    t0=$(date +%s.%N)
    # The exit status of the program, not of tee, is kept.
    { "$b"; echo $? > "$tmp.rc"; } | tee -a "$tmp"
    rc=$(cat "$tmp.rc")
    rm -f "$tmp.rc"
    t1=$(date +%s.%N)
    echo "# program $name exit=$rc seconds=$(echo "$t1 $t0" | awk '{printf "%.1f", $1 - $2}')" \
        | tee -a "$tmp"
    [ "$rc" = 0 ] || status=1
done
if [ "$found" = 0 ]; then
    echo "no benchmark programs were built under $build/bench" >&2
    status=1
fi
echo "# loadavg end $(cat /proc/loadavg)" >> "$tmp"
mv "$tmp" "$out/latest.txt"
echo "wrote $out/latest.txt in $(( $(date +%s) - start )) s"
"$py" "$here/collect.py" "$out/latest.txt" "$here/targets.txt" "$out/latest.json" "$build" \
    || status=1
exit $status
