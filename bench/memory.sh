#!/usr/bin/env bash
# The generator's peak RSS with many open keep-alive connections, per --io backend, in the
# same session (backends interleaved):
#   - 10,000 connections, one process, one thread, against nginx (bench/lib.sh, 1 worker):
#     webtune bench URL -c 10000 -d SECONDS --io IO; peak RSS from getrusage (bench/rusage.py)
#     and from the result JSON (generator.max_rss_kib).
#   - 50,000 connections through `webtune lab run nginx` (docs/performance.md, "50,000
#     keep-alive connections"): the generator runs as 3 shard processes (the hard open-file
#     limit); lab run prints their peak RSS and the sum. Needs root (a private network
#     namespace for the os.* sysctls); the lab's state lives in a private WEBTUNE_LAB_DIR.
# Goals (issue 21): ≤ 64 MB at 10k, ≤ 200 MB summed over the processes at 50k.
#
#   bench/memory.sh [ROUNDS] [SECONDS]      defaults: 2 rounds, 5 s (10k) / 3 s (50k) per run
#   IO="epoll uring"  (default)    SKIP_50K=1   only the 10k runs
set -euo pipefail
ROUNDS=${1:-2}
SECS=${2:-5}
IO=${IO:-epoll uring}
source "$(dirname "$0")/lib.sh"
ensure_webtune
command -v python3 >/dev/null || { echo "bench/memory.sh: needs python3"; exit 1; }
if [ "$(ulimit -Hn)" != unlimited ] && [ "$(ulimit -Hn)" -lt 10200 ]; then
  echo "bench/memory.sh: the hard open-file limit is $(ulimit -Hn); 10,000 connections need 10,200"; exit 1
fi
start_nginx

echo "nginx 1 worker on $URL; $ROUNDS rounds; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg); $WEBTUNE"
echo "10,000 connections, one process, -t 1, ${SECS}s:"
for r in $(seq "$ROUNDS"); do
  for io in $IO; do
    python3 "$here/rusage.py" "$work/ru" -- "${client_pin[@]}" "$WEBTUNE" bench "$URL" -t 1 -c 10000 \
      -d "${SECS}s" --io "$io" -q --json "$work/w.json" > /dev/null 2>&1 || true
    read -r user sys rss code < "$work/ru"
    python3 - "$work/w.json" "$io" "$rss" "$r" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"  round {sys.argv[4]} --io {sys.argv[2]:<6} backend {r.get('io_backend', '?'):<6} "
      f"{r['connections_opened']} connections, {r['responses']} responses, "
      f"errors {sum(r['errors'].values())}, peak RSS {int(sys.argv[3]) / 1024:.1f} MiB "
      f"(result JSON {r['generator']['max_rss_kib'] / 1024:.1f} MiB)")
PY
  done
done

[ "${SKIP_50K:-0}" = 1 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "bench/memory.sh: the 50,000-connection runs need root (lab run's private network namespace); SKIP_50K=1 to leave them out"
  exit 1
fi
labdir=$(mktemp -d /tmp/webtune-bench-lab.XXXXXX)
# The servers' workers (www-data) pass through it; webtune keeps a lab root's mode as given.
chmod 711 "$labdir"
chmod 711 "$labdir"
trap 'WEBTUNE_LAB_DIR=$labdir "$WEBTUNE" lab clean >/dev/null 2>&1 || true; rm -rf "$labdir"; kill -TERM $ngx 2>/dev/null || true; wait $ngx 2>/dev/null || true; rm -rf "$work"' EXIT INT TERM
echo "50,000 connections, lab run nginx (4 workers, 4 addresses), 3 s, generator as shard processes:"
for r in $(seq "$ROUNDS"); do
  for io in $IO; do
    WEBTUNE_LAB_DIR=$labdir "$WEBTUNE" lab run nginx --addresses 4 --set worker_processes=4 \
      --set worker_connections=16000 --set worker_rlimit_nofile=20000 --set os.nofile=20000 \
      --set reuseport=on --set os.somaxconn=4096 --set listen_backlog=4096 \
      --set os.ip_local_port_min=1024 -- -c 50000 -d 3s --io "$io" --json "$work/l.json" /empty.gif \
      > "$work/lab.out" 2> "$work/lab.err" || true
    line=$(grep 'generator processes, peak RSS' "$work/lab.err" || echo "no RSS line: $(tail -1 "$work/lab.err")")
    python3 - "$work/l.json" "$io" "$r" "$line" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
    got = (f"backend {r.get('io_backend', '?')}, {r['connections_opened']} connections, "
           f"{r['responses']} responses, errors {sum(r['errors'].values())}")
except Exception as e:
    got = f"no result ({e})"
print(f"  round {sys.argv[3]} --io {sys.argv[2]:<6} {got}; {sys.argv[4].removeprefix('lab: ')}")
PY
  done
done
echo "load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
