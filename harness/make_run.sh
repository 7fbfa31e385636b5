#!/bin/sh
# `make run` until the scenario runner exists: judges every golden response body in
# fixtures/bodies/ with `syncroll check-body` against its expected outcome (the same driver as
# the ctest entry cli.check_body_golden) and writes reports/<run-id>/summary.txt and
# reports/latest. Exit 0 when every body gave its expected outcome, 1 otherwise.
set -u
S=${1:?usage: make_run.sh path/to/syncroll}
cd "$(dirname "$0")/.." || exit 2
echo "make run: the scenario runner does not exist yet; judging the golden bodies in fixtures/bodies/ with syncroll check-body instead"
run_id=$(date -u +%Y%m%dT%H%M%SZ)
dir=reports/$run_id
mkdir -p "$dir"
SYNCROLL="$S" SYNCROLL_SOURCE_DIR="$PWD" sh tests/check_body_golden.sh >"$dir/driver.log" 2>&1
driver=$?
passed=$(grep -c '^ok: ' "$dir/driver.log")
failed=$(grep -c '^FAIL: ' "$dir/driver.log")
{
    sed -n 's/^ok: \(.*\)/PASS \1/p; s/^FAIL: \(.*\)/FAIL \1/p' "$dir/driver.log"
    echo "$passed passed, $failed failed"
} >"$dir/summary.txt"
ln -sfn "$run_id" reports/latest
cat "$dir/summary.txt"
echo "report: $dir/summary.txt"
if [ "$driver" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$passed" -eq 0 ]; then
    exit 1
fi
exit 0
