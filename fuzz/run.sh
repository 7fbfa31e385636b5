#!/bin/sh
# Runs every built fuzz target for SECONDS each, seeded from fuzz/corpus/<target>/ and fixtures/.
# Fails on any crash, leak or sanitizer report; crashers are left as fuzz/crash-<target>-*.
set -u
build=${1:-build-fuzz}
seconds=${2:-60}
status=0
found=0
for t in "$build"/fuzz/fuzz_*; do
    [ -x "$t" ] || continue
    found=1
    name=$(basename "$t")
    work="fuzz/corpus-$name"
    mkdir -p "$work"
    seeds=""
    [ -d "fuzz/corpus/$name" ] && seeds="fuzz/corpus/$name"
    case $name in
    fuzz_splice | fuzz_splice_diff | fuzz_envelope | fuzz_json | fuzz_jdom) seeds="$seeds fixtures/bodies fixtures/conformance" ;;
    fuzz_fields) seeds="$seeds fixtures/fields" ;;
    fuzz_scenario) seeds="$seeds scenarios/examples scenarios/nightly" ;;
    fuzz_results) seeds="$seeds fuzz/corpus/fuzz_json" ;;
    esac
    echo "== $name for ${seconds}s"
    if ! "$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
            -artifact_prefix="fuzz/crash-$name-" -print_final_stats=1 \
            "$work" $seeds 2>"$work.log"; then
        echo "FAIL: $name (see $work.log)"; tail -30 "$work.log"; status=1
    else
        grep -E '^stat::number_of_executed_units|^Done' "$work.log" | tail -2
    fi
done
if [ "$found" = 0 ]; then echo "no fuzz targets were built under $build/fuzz" >&2; exit 1; fi
exit $status
