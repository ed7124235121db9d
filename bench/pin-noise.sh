#!/usr/bin/env bash
# How much pinning (`lab run --server-cpus 1 --client-cpus 0`) lowers run-to-run noise on a
# 2-CPU machine: ROUNDS interleaved pairs (unpinned, pinned, unpinned, ...) of
# `lab run nginx --set worker_processes=1 -- -c 50 -d SECONDS`, then per arm the req/s of
# each run, the median and the min-max spread (max-min)/median, with each run's steal.
#
#   bench/pin-noise.sh [ROUNDS] [SECONDS]        defaults: 5 rounds, 3 s per run
#
# A measurement, not a test: it asserts nothing. A private WEBTUNE_LAB_DIR is used.
set -euo pipefail
ROUNDS=${1:-5}
SECS=${2:-3}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
WEBTUNE=${WEBTUNE:-$top/target/debug/webtune}
[ -x "$WEBTUNE" ] || (cd "$top" && cargo build -q -p webtune)
export WEBTUNE_LAB_DIR=$(mktemp -d /tmp/webtune-pin.XXXXXX)
# The servers' workers (www-data) pass through it; webtune keeps a lab root's mode as given.
chmod 711 "$WEBTUNE_LAB_DIR"
trap '"$WEBTUNE" lab clean >/dev/null 2>&1; rm -rf "$WEBTUNE_LAB_DIR"' EXIT

declare -A rps steal
for ((r = 1; r <= ROUNDS; r++)); do
  for arm in unpinned pinned; do
    pin=()
    [ $arm = pinned ] && pin=(--server-cpus 1 --client-cpus 0)
    out=$("$WEBTUNE" lab run nginx --set worker_processes=1 "${pin[@]}" -- -c 50 -d "${SECS}s" /empty.gif 2>/dev/null)
    rps[$arm]+="$(echo "$out" | awk '/requests\/s/ {print $2; exit}') "
    steal[$arm]+="$(echo "$out" | grep -o 'steal [0-9.]*%' | head -1 | cut -d' ' -f2) "
  done
done
for arm in unpinned pinned; do
  echo "$arm: req/s ${rps[$arm]}(steal ${steal[$arm]})" |
    sed 's/ )/)/'
  echo "${rps[$arm]}" | tr ' ' '\n' | grep . | sort -n | awk -v arm="$arm" '
    { v[NR] = $1 }
    END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
          printf "%s: median %.0f req/s, min %.0f, max %.0f, spread %.1f%% of the median\n",
                 arm, m, v[1], v[NR], 100 * (v[NR] - v[1]) / m }'
done
