#!/bin/sh
# ctest docs.generated: every generated reference page in docs/reference/ equals what its
# generator prints now, so a table changed in the source without `make docs` fails the build's
# tests. With --write it regenerates the pages instead (`make docs`).
# Usage: docs_generated.sh SYNCROLL SOURCE_DIR [--write]
set -eu
bin=$1
src=$2
mode=${3:-check}
status=0
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for page in errors faults checks; do
    "$bin" "$page" --markdown >"$tmp"
    if [ "$mode" = --write ]; then
        cp "$tmp" "$src/docs/reference/$page.md"
        echo "wrote docs/reference/$page.md"
    elif ! cmp -s "$tmp" "$src/docs/reference/$page.md"; then
        echo "docs/reference/$page.md is stale: it differs from \`syncroll $page --markdown\`" >&2
        diff -u "$src/docs/reference/$page.md" "$tmp" | head -20 >&2 || true
        echo "regenerate it with \`make docs\`" >&2
        status=1
    fi
done
exit $status
