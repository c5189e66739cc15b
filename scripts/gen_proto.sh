#!/usr/bin/env bash
# Regenerates the committed protobuf/gRPC modules of the wire API (sdk/api, import name
# spindle.api) from the .proto files next to them. CI runs `scripts/gen_proto.sh --check`
# (and tests/packaging/test_generated_api.py), which fail when the committed modules are not
# what the .proto files generate with the installed grpcio-tools.
#
# The folder sdk/ is the import package spindle (pyproject's package-dir), so protoc sees it
# under that virtual path: the generated modules then import each other as `spindle.api`.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
src=sdk/api
virtual=spindle/api
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$PY" -m grpc_tools.protoc -Ispindle=sdk \
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
