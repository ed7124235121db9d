#!/usr/bin/env bash
# `webtune merge` at scale (issue 37): SHARDS synthetic shards (default 1,000) of one
# SECONDS-long open-loop test (default 60), each with a per-second time series and
# histograms of about 10,000 distinct buckets (crates/testkit/examples/synthetic_shards.rs:
# latencies spread from 50 µs to 5 s, 1,000 responses/s per shard), merged once with the
# release binary. Reports the wall time and the peak RSS (getrusage, bench/rusage.py) and
# checks the merged count; the goal is ≤ 10 s and ≤ 1 GiB on the 2-core machine.
# The peer, in the same run: Python's json module only reading the same files (no
# histogram decoded, nothing added): the floor any merge of these files stands on.
#
#   bench/merge-scale.sh [SHARDS] [SECONDS] [ROUNDS]        defaults: 1000 60 2
set -euo pipefail
SHARDS=${1:-1000}
SECS=${2:-60}
ROUNDS=${3:-2}
source "$(dirname "$0")/lib.sh"
ensure_webtune
command -v python3 >/dev/null || { echo "bench/merge-scale.sh: needs python3"; exit 1; }
work=$(mktemp -d /tmp/webtune-merge-scale.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "== $SHARDS synthetic shards of a ${SECS} s test into $work"
(cd "$top" && cargo build --release -q -p webtune-testkit --example synthetic_shards)
per_shard=$("$top/target/release/examples/synthetic_shards" "$work/in" "$SHARDS" "$SECS")
mb=$(du -sm "$work/in" | cut -f1)
echo "   $mb MB of JSON, $per_shard responses per shard; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"

now() { date +%s.%N; }
for r in $(seq "$ROUNDS"); do
  t0=$(now)
  python3 "$here/rusage.py" "$work/ru" -- "$WEBTUNE" merge "$work"/in/shard-*.json \
    -q --json "$work/all.json" > "$work/merge.out" 2>&1 || { cat "$work/merge.out"; exit 1; }
  t1=$(now)
  read -r user sys rss _ < "$work/ru"
  python3 - "$work/all.json" "$SHARDS" "$per_shard" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
want = int(sys.argv[2]) * int(sys.argv[3])
assert r["responses"] == want, (r["responses"], want)
assert r["histograms"]["total"], "a merged histogram"
assert len(r["sharding"]["shards"]) == int(sys.argv[2])
PY
  t2=$(now)
  python3 "$here/rusage.py" "$work/ru-py" -- python3 -c '
import json, sys
for f in sys.argv[1:]:
    with open(f) as fh: json.load(fh)
' "$work"/in/shard-*.json
  t3=$(now)
  read -r _ _ rss_py _ < "$work/ru-py"
  awk -v r="$r" -v m0="$t0" -v m1="$t1" -v u="$user" -v s="$sys" -v rss="$rss" \
      -v p0="$t2" -v p1="$t3" -v rp="$rss_py" -v n="$SHARDS" 'BEGIN {
    m = m1 - m0; p = p1 - p0
    printf "   round %d: webtune merge %d shards %.2f s (CPU %.2f s user + %.2f s sys), peak RSS %.0f MiB;", r, n, m, u, s, rss / 1024
    printf " python3 json.load only %.2f s, %.0f MiB; merge/read x%.2f time\n", p, rp / 1024, m / p
  }'
done
echo "goal: <= 10 s and <= 1024 MiB"
