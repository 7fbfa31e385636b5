#!/bin/sh
# ctest python.install: the package installs offline with Debian's setuptools
# (pip install --no-build-isolation -e python/, in a throw-away venv that sees the system's
# numpy and pytest) and its pytest plugin loads through the entry point: the example suite
# runs with no -p flag.
# Usage: python_install.sh PYTHON3 SYNCROLL SOURCE_DIR
set -eu
py=$1 bin=$2 src=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/syncroll-pyinst.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
"$py" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/python" -m pip install -q --no-build-isolation --no-index -e "$src/python"
cd "$work"
SYNCROLL_BIN=$bin PYTHONDONTWRITEBYTECODE=1 "$work/venv/bin/python" -m pytest -q \
    -p no:cacheprovider "$src/python/examples"
