#!/usr/bin/env bash
# The static checks CI runs before the tests (scripts/test.sh):
#   ruff  - import sorting and the bug-finding rule sets ([tool.ruff] in pyproject.toml);
#   mypy  - types: strict on the public SDK and the history service, checked elsewhere
#           ([tool.mypy] in pyproject.toml).
#   bash scripts/lint.sh            (PYTHON=... to use another interpreter; default .venv/bin/python)
# mypy resolves `spindle.*` from a tree of symlinks under .typecheck/ that lays the three
# folders out as the one import package they install as (sdk/ -> spindle, widgets/ ->
# spindle.widgets, controlplane/ -> spindle.controlplane), because an editable install maps
# them with an import hook that mypy cannot follow.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
case "$PY" in /*) ;; */*) PY="$PWD/$PY" ;; esac  # absolute: mypy runs from .typecheck/

"$PY" -m ruff check --quiet .

root=.typecheck/spindle
rm -rf .typecheck && mkdir -p "$root"
for entry in sdk/*; do ln -s "$PWD/$entry" "$root/$(basename "$entry")"; done
ln -s "$PWD/widgets" "$root/widgets"
ln -s "$PWD/controlplane" "$root/controlplane"
(cd .typecheck && "$PY" -m mypy --config-file ../pyproject.toml -p spindle)
