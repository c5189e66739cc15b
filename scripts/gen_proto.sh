#!/usr/bin/env bash
# Regenerates the committed protobuf/gRPC modules in controlplane/api from the
# .proto files next to them. CI runs `scripts/gen_proto.sh --check`, which fails
# when the committed modules are not what the .proto files generate.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
out=controlplane/api
if [ "${1:-}" = "--check" ]; then
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  "$PY" -m grpc_tools.protoc -I . --python_out="$tmp" --pyi_out="$tmp" --grpc_python_out="$tmp" $out/*.proto
  rc=0
  for f in "$tmp"/$out/*.py "$tmp"/$out/*.pyi; do
    if ! cmp -s "$f" "$out/$(basename "$f")"; then echo "stale generated module: $out/$(basename "$f") (run scripts/gen_proto.sh)"; rc=1; fi
  done
  exit $rc
fi
"$PY" -m grpc_tools.protoc -I . --python_out=. --pyi_out=. --grpc_python_out=. $out/*.proto
echo "generated: $(ls $out/*_pb2*.py* | tr '\n' ' ')"
