#!/usr/bin/env bash
# Batch-1 latency of each demo model through the local Triton, measured with the suite itself:
# one user, batch 1, seq 384, HTTP, 15 s per model, for each preset given (default: tiny full).
#   bash bench/model_latency.sh [tiny] [full]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
ports=(--http-port 18700 --grpc-port 18701 --metrics-port 18702)
work=$(mktemp -d)
trap 'kill -TERM "${server:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
for preset in "${@:-tiny full}"; do
  for p in $preset; do
    start=$(date +%s.%N)
    $PY -m loadtests serve --preset "$p" "${ports[@]}" --log-file "$work/triton-$p.log" > "$work/serve-$p.out" 2>&1 &
    server=$!
    until grep -q "Ctrl-C" "$work/serve-$p.out" 2>/dev/null; do
      kill -0 "$server" 2>/dev/null || { cat "$work/serve-$p.out" >&2; exit 1; }
      sleep 0.2
    done
    echo "$p: serve ready after $(echo "$(date +%s.%N) - $start" | bc) s (includes building missing weights)"
    for model in bert_qa bert_qa_dynbatch resnet50; do
      cls=BertQAHttpUser; [ "$model" = resnet50 ] && cls=ResNetHttpUser
      $PY -m locust -f locustfile.py --headless --only-summary -u 1 -r 1 -t 15s "$cls" --model "$model" \
        --batch-size 1 --seq-len 384 --triton-http 127.0.0.1:18700 --triton-grpc 127.0.0.1:18701 \
        --triton-metrics 127.0.0.1:18702 --run-dir "$work/$p-$model" > /dev/null 2>&1
      $PY - "$work/$p-$model" "$p" "$model" <<'PYEOF'
import sys
from analysis import load_run
(e,) = load_run(sys.argv[1]).endpoints.values()
l = e.latency_us
print(f"  {sys.argv[2]} {sys.argv[3]}: n={e.requests} p50={l['p50']/1000:.2f} ms p90={l['p90']/1000:.2f} ms p99={l['p99']/1000:.2f} ms")
PYEOF
    done
    kill -TERM "$server"; wait "$server" || true; server=
  done
done
