#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh machine and runs it.
#   bash scripts/test.sh [pytest args...]
# - Debian packages: chromium (the widget tests render in a real headless browser).
#   The Cloud Spanner emulator (google-cloud-cli-spanner-emulator) and terraform 1.11 come
#   with the machine image; the tests start and stop the emulator themselves.
# - A virtual environment in .venv with the project and its test extras.
# - A check that the committed protobuf modules match the .proto files.
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

# In CI the Cloud Spanner tests must run: a missing emulator fails them instead of skipping.
if [ -n "${CI:-}" ]; then export SPINDLE_REQUIRE_SPANNER=1; fi

exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
