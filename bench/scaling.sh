#!/usr/bin/env bash
# Scaling with generator threads, per --io backend, beside wrk with the same threads, against
# the same server in the same run: requests/s and the generator's CPU µs per request
# (user+sys of the whole process from getrusage, bench/rusage.py, the same for every tool).
# c = 64 × threads, keep-alive, 43-byte body, loopback; rounds interleaved.
#
#   bench/scaling.sh [ROUNDS] [SECONDS]        defaults: 3 rounds, 4 s per run
#   THREADS="1 2 4 8"    thread counts (default); those above the machine's cores are left
#                        out with a line saying so (FORCE=1 runs them anyway: they then
#                        measure time-sharing, not scaling)
#   TARGET=nginx|serve   nginx from Debian's package with NGINX_WORKERS workers (default: the
#                        core count), or webtune's embedded target (webtune serve --workers
#                        SERVE_WORKERS, default the core count)
#   IO="epoll uring"     the backends (default both)
#
# On a machine where generator and server share the cores, req/s is the server's and the
# machine's; CPU per request is the figure the generator controls. A benchmark, not a test.
set -euo pipefail
ROUNDS=${1:-3}
SECS=${2:-4}
THREADS=${THREADS:-1 2 4 8}
TARGET=${TARGET:-nginx}
IO=${IO:-epoll uring}
cores=$(nproc)
source "$(dirname "$0")/lib.sh"
ensure_webtune
for tool in wrk python3; do
  command -v $tool >/dev/null || { echo "bench/scaling.sh: needs $tool (apt-get install wrk python3)"; exit 1; }
done
run_threads=()
for t in $THREADS; do
  if [ "$t" -gt "$cores" ] && [ "${FORCE:-0}" != 1 ]; then
    echo "bench/scaling.sh: $t threads left out: this machine has $cores cores (FORCE=1 to run anyway)"
  else
    run_threads+=("$t")
  fi
done
case $TARGET in
  nginx)
    NGINX_WORKERS=${NGINX_WORKERS:-$cores}
    start_nginx
    server="nginx, $NGINX_WORKERS workers" ;;
  serve)
    work=$(mktemp -d /tmp/webtune-bench.XXXXXX)
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    ulimit -n 20000 2>/dev/null || true
    "${server_pin[@]}" "$WEBTUNE" serve --addr "127.0.0.1:$port" --workers "${SERVE_WORKERS:-$cores}" 2> "$work/serve.log" &
    srv=$!
    trap 'kill -TERM $srv 2>/dev/null || true; wait $srv 2>/dev/null || true; rm -rf "$work"' EXIT INT TERM
    for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
    URL=http://127.0.0.1:$port/empty.gif
    server="webtune serve, ${SERVE_WORKERS:-$cores} workers" ;;
  *) echo "bench/scaling.sh: TARGET must be nginx or serve, not $TARGET"; exit 1 ;;
esac

rows="$work/rows"
measure() {
  local name=$1 t=$2; shift 2
  local out="$work/out" ru="$work/ru" reqs secs
  python3 "$here/rusage.py" "$ru" -- "${client_pin[@]}" "$@" > "$out" 2>&1 || true
  case $name in
    wrk) reqs=$(awk '/requests in/ {print $1}' "$out"); secs=$SECS ;;
    *) reqs=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["responses"])' "$work/w.json")
       secs=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["duration_s"])' "$work/w.json") ;;
  esac
  read -r user sys rss code < "$ru"
  echo "$name $t ${reqs:-0} ${secs:-1} $user $sys" >> "$rows"
}

echo "$server on $URL; $ROUNDS rounds x ${SECS}s, threads ${run_threads[*]}, c=64/thread, --io $IO; $cores cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
  for t in "${run_threads[@]}"; do
    c=$((64 * t))
    measure wrk "$t" wrk -t"$t" -c"$c" -d"${SECS}s" "$URL"
    for io in $IO; do
      measure "webtune-$io" "$t" "$WEBTUNE" bench "$URL" -t "$t" -c "$c" -d "${SECS}s" --io "$io" -q --json "$work/w.json"
    done
  done
  echo "  round $r done (load $(cut -d' ' -f1-3 /proc/loadavg))"
done

python3 - "$rows" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, t, reqs, secs, user, sys_ = line.split()
    reqs, secs = int(reqs), float(secs)
    rows.setdefault((int(t), name), []).append((reqs / secs, 1e6 * (float(user) + float(sys_)) / max(reqs, 1)))
med = {k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v)) for k, v in rows.items()}
# "x wrk CPU": the median of the ratios within each round (wrk ran seconds before, same server).
print(f"\n{'threads':<9}{'generator':<16}{'req/s':>10}{'CPU us/req':>12}{'x wrk CPU':>11}{'req/s x 1 thread':>18}  per round")
for (t, name), (rps, us) in sorted(med.items()):
    per = [a[1] / b[1] for a, b in zip(rows[(t, name)], rows.get((t, "wrk"), []))]
    one = med.get((1, name))
    print(f"{t:<9}{name:<16}{rps:>10.0f}{us:>12.2f}{(statistics.median(per) if per else float('nan')):>11.2f}"
          f"{(rps / one[0] if one else float('nan')):>18.2f}  " + ", ".join(f"{x:.2f}" for x in per))
PY
