#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh machine and runs it.
#   bash scripts/test.sh [pytest args...]   (SPINDLE_TEST_SERIAL=1: one process, no workers)
# - Debian packages: chromium (the widget tests render in a real headless browser).
#   The Cloud Spanner emulator (google-cloud-cli-spanner-emulator) and terraform 1.11 come
#   with the machine image; the tests start and stop the emulator themselves.
# - A virtual environment in .venv with the project and its test extras.
# - A check that the committed protobuf modules match the .proto files.
# - In CI, a check that the dependency floors in pyproject.toml are true (scripts/check_floors.py).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1; then
  echo "installing chromium (headless browser for the widget tests)..."
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[test]"

PYTHON=.venv/bin/python scripts/gen_proto.sh --check

# ruff and mypy (pyproject.toml [tool.ruff], [tool.mypy]).
PYTHON=.venv/bin/python bash scripts/lint.sh

# In CI the Cloud Spanner tests must run: a missing emulator fails them instead of skipping.
if [ -n "${CI:-}" ]; then export SPINDLE_REQUIRE_SPANNER=1; fi

# Two parts (SPINDLE_TEST_SERIAL=1: everything in one process instead):
# 1. every test not marked `serial`, in 2 worker processes (pytest-xdist; a file's tests stay on one
#    worker, so module fixtures are built once). Most tests wait on servers and subprocesses, not on
#    the CPU: two workers halve the wall time on a 2-core machine.
# 2. the `serial` tests (they kill processes on a timer or assert on throughput; tests/conftest.py
#    SERIAL) alone, so the parallel part cannot starve them. A failed one is run once more, and both
#    runs are reported ("R" in the progress line, "rerun" in the summary): a lease takeover after
#    kill -9 still misses its time bound now and then on a 2-core machine (see the closing note).
PYTEST=(.venv/bin/python -m pytest -q -p no:cacheprovider)
if [ -n "${SPINDLE_TEST_SERIAL:-}" ]; then
  exec "${PYTEST[@]}" "$@"
fi
set +e
# In CI, before the suite: the oldest releases pyproject.toml allows. A throwaway venv with every
# runtime dependency pinned to its floor imports every module and runs a set of tests through each
# dependency (scripts/check_floors.py; about a minute with pip's cache warm, the first run also downloads).
floors=0
if [ -n "${CI:-}" ]; then .venv/bin/python scripts/check_floors.py; floors=$?; fi
"${PYTEST[@]}" -n 2 --dist loadfile -m "not serial" "$@"; parallel=$?
"${PYTEST[@]}" -m serial --reruns 1 --reruns-delay 2 "$@"; serial=$?
set -e
# exit code 5 = no test selected in that part (e.g. a path with no serial test in it)
if [ "$parallel" = 5 ] && [ "$serial" = 5 ]; then exit 5; fi
if [ "$floors" != 0 ]; then echo "scripts/check_floors.py failed (see above)" >&2; exit "$floors"; fi
for rc in "$parallel" "$serial"; do
  if [ "$rc" != 0 ] && [ "$rc" != 5 ]; then exit "$rc"; fi
done
exit 0
