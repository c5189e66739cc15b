#!/usr/bin/env bash
# Regenerates the committed protobuf/gRPC modules in controlplane/api from the
# .proto files next to them. CI runs `scripts/gen_proto.sh --check`, which fails
# when the committed modules are not what the .proto files generate.
#
# The folder controlplane/ is the import package spindle.controlplane (pyproject's
# package-dir), so protoc sees it under that virtual path: the generated modules then
# import each other as `spindle.controlplane.api`.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
src=controlplane/api
virtual=spindle/controlplane/api
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$PY" -m grpc_tools.protoc -Ispindle/controlplane=controlplane \
  --python_out="$tmp" --pyi_out="$tmp" --grpc_python_out="$tmp" $src/*.proto
if [ "${1:-}" = "--check" ]; then
  rc=0
  for f in "$tmp"/$virtual/*.py "$tmp"/$virtual/*.pyi; do
    if ! cmp -s "$f" "$src/$(basename "$f")"; then echo "stale generated module: $src/$(basename "$f") (run scripts/gen_proto.sh)"; rc=1; fi
  done
  exit $rc
fi
cp "$tmp"/$virtual/*_pb2*.py* "$src/"
echo "generated: $(ls $src/*_pb2*.py* | tr '\n' ' ')"
