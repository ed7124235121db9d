#!/usr/bin/env bash
# webtune vs wrk (and ab) against the same nginx, in the same run: requests/s and the
# generator's own CPU per request (user+sys of the generator process / completed requests).
#
#   bench/vs-wrk.sh [ROUNDS] [SECONDS]        defaults: 3 rounds, 5 s per run
#   IO="epoll uring" bench/vs-wrk.sh            webtune once per --io backend (the io column);
#                                               uring-poll: io_uring as readiness only (reads and
#                                               writes by system call: WEBTUNE_URING_NO_SEND=1
#                                               WEBTUNE_URING_NO_RECV=1); uring-send: sends
#                                               through the ring, reads on readiness
#                                               (WEBTUNE_URING_NO_RECV=1); uring: both
#   SYSCALLS=0 bench/vs-wrk.sh                  skip the system calls per request (perf)
#
# nginx from Debian's package: 1 worker, 43-byte empty.gif, keep-alive, loopback, a private
# directory. Runs are interleaved (wrk, webtune, wrk, webtune, ...) because this machine's
# noise is large (LAB-NOTES: 3-50% between identical runs). Prints medians and the ratio
# webtune / peer. A benchmark, not a test: it asserts nothing.
set -euo pipefail
ROUNDS=${1:-3}
SECS=${2:-5}
CONNS=${CONNS:-100}
THREADS=${THREADS:-1}
IO=${IO:-epoll uring-send uring}
SYSCALLS=${SYSCALLS:-1}
source "$(dirname "$0")/lib.sh"
# webtune under backend $1 of $IO: "env [WEBTUNE_URING_NO_…=1] webtune" and its --io.
wt() {
  case $1 in
    uring-poll) echo "env WEBTUNE_URING_NO_SEND=1 WEBTUNE_URING_NO_RECV=1 $WEBTUNE" ;;
    uring-send) echo "env WEBTUNE_URING_NO_RECV=1 $WEBTUNE" ;;
    *) echo "env $WEBTUNE" ;;
  esac
}
io_arg() { echo "${1%%-*}"; }
ensure_webtune
for tool in wrk ab python3; do
  command -v $tool >/dev/null || { echo "needs $tool (apt-get install nginx-light wrk apache2-utils)"; exit 1; }
done
start_nginx

# measure NAME CMD... : runs CMD under rusage.py, parses the request count, appends a row.
rows="$work/rows"
measure() {
  local name=$1; shift
  local out="$work/out" ru="$work/ru"
  python3 "$here/rusage.py" "$ru" -- "${client_pin[@]}" "$@" > "$out" 2>&1 || true
  local reqs
  case $name in
    wrk*) reqs=$(awk '/requests in/ {print $1}' "$out") ;;
    ab*) reqs=$(awk '/^Complete requests:/ {print $3}' "$out") ;;
    webtune*) reqs=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["responses"])' "$work/w.json") ;;
  esac
  read -r user sys rss code < "$ru"
  local secs
  case $name in
    webtune*) secs=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["duration_s"])' "$work/w.json") ;;
    ab*) secs=$(awk '/^Time taken for tests:/ {print $5}' "$out") ;;
    *) secs=$SECS ;;
  esac
  echo "$name $reqs $secs $user $sys $rss" >> "$rows"
}

echo "nginx 1 worker on $URL; $ROUNDS rounds x ${SECS}s, c=$CONNS, t=$THREADS; $(nproc) cores${SERVER_CPUS:+; nginx on CPU $SERVER_CPUS, client on CPU $CLIENT_CPUS}; load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
  measure wrk-ka wrk -t"$THREADS" -c"$CONNS" -d"${SECS}s" "$URL"
  measure ab-ka ab -q -k -t "$SECS" -n 10000000 -c "$CONNS" "$URL"
  for io in $IO; do
    measure webtune-ka-$io $(wt "$io") bench "$URL" -t "$THREADS" -c "$CONNS" -d "${SECS}s" --io "$(io_arg "$io")" -q --json "$work/w.json"
  done
  measure wrk-close wrk -t"$THREADS" -c"$CONNS" -d"${SECS}s" -H "Connection: close" "$URL"
  measure ab-close ab -q -t "$SECS" -n 10000000 -c "$CONNS" "$URL"
  for io in $IO; do
    measure webtune-close-$io $(wt "$io") bench "$URL" -t "$THREADS" -c "$CONNS" -d "${SECS}s" --io "$(io_arg "$io")" --no-keepalive -q --json "$work/w.json"
  done
  echo "  round $r done (load $(cut -d' ' -f1-3 /proc/loadavg))"
done

python3 - "$rows" "$IO" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, reqs, secs, user, sys_, rss = line.split()
    reqs, secs, cpu = int(reqs), float(secs), float(user) + float(sys_)
    rows.setdefault(name, []).append((reqs / secs, 1e6 * cpu / max(reqs, 1), float(sys_) / max(cpu, 1e-9)))
med = {k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v),
           statistics.median(r[2] for r in v), min(r[0] for r in v), max(r[0] for r in v)) for k, v in rows.items()}
print(f"\n{'generator':<26}{'req/s (median)':>16}{'min-max':>20}{'CPU us/req':>12}{'sys share':>11}")
for k, (rps, us, sysf, lo, hi) in med.items():
    print(f"{k:<26}{rps:>16.0f}{f'{lo:.0f}-{hi:.0f}':>20}{us:>12.2f}{sysf:>10.0%}")
def ratio(a, b):
    if a in med and b in med:
        print(f"{a} / {b}: req/s x{med[a][0]/med[b][0]:.2f}, CPU per request x{med[a][1]/med[b][1]:.2f}")
print()
for io in sys.argv[2].split():
    best = min(("wrk-ka", "ab-ka"), key=lambda k: med[k][1] if k in med else 1e9)
    ratio(f"webtune-ka-{io}", best)
    ratio(f"webtune-close-{io}", "wrk-close")
    ratio(f"webtune-close-{io}", "ab-close")
PY

if [ "$SYSCALLS" = 1 ] && command -v perf >/dev/null; then
  # System calls per completed request, counted by perf's syscall tracepoints (every thread
  # of the generator; needs root or perf_event_paranoid <= -1): keep-alive, c=$CONNS.
  echo
  echo "system calls per request (perf stat -e 'syscalls:sys_enter_*', keep-alive, 3 s):"
  sysc() {
    local name=$1; shift
    perf stat -e 'syscalls:sys_enter_*' -x, -o "$work/perf" -- "${client_pin[@]}" "$@" > "$work/out" 2>&1 || true
    local reqs
    case $name in
      wrk*) reqs=$(awk '/requests in/ {print $1}' "$work/out") ;;
      ab*) reqs=$(awk '/^Complete requests:/ {print $3}' "$work/out") ;;
      webtune*) reqs=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["responses"])' "$work/w.json") ;;
    esac
    python3 - "$work/perf" "$name" "$reqs" <<'PY'
import sys
counts = {}
for line in open(sys.argv[1]):
    f = line.strip().split(",")
    if len(f) > 2 and f[0].isdigit() and int(f[0]) > 0:
        counts[f[2].replace("syscalls:sys_enter_", "")] = int(f[0])
reqs = max(int(sys.argv[3] or 0), 1)
top = sorted(counts.items(), key=lambda kv: -kv[1])[:4]
print(f"  {sys.argv[2]:<26}{sum(counts.values()) / reqs:6.2f} per request  ("
      + ", ".join(f"{k} {v / reqs:.2f}" for k, v in top) + f"; {reqs} requests)")
PY
  }
  sysc wrk-ka wrk -t"$THREADS" -c"$CONNS" -d3s "$URL"
  sysc ab-ka ab -q -k -t 3 -n 10000000 -c "$CONNS" "$URL"
  for io in $IO; do
    sysc webtune-ka-$io $(wt "$io") bench "$URL" -t "$THREADS" -c "$CONNS" -d 3s --io "$(io_arg "$io")" -q --json "$work/w.json"
  done
fi

echo
for io in $IO; do
echo "webtune --io $io RSS with 10,000 open connections (keep-alive, 5 s):"
"${client_pin[@]}" $(wt "$io") bench "$URL" -t "$THREADS" -c 10000 -d 5s --io "$(io_arg "$io")" -q --json "$work/w10k.json" || true
python3 - "$work/w10k.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
g = r["generator"]
print(f"  {r['connections_opened']} connections, {r['responses']} responses, "
      f"errors {sum(r['errors'].values())}, peak RSS {g['max_rss_kib'] / 1024:.1f} MiB")
PY
done
