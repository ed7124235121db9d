#!/usr/bin/env bash
# webtune vs wrk and h2load over TLS, against the same nginx (1 worker, 43-byte empty.gif,
# TLS 1.3, self-signed P-256, session cache on), in the same run, one generator thread:
#   - TLS keep-alive HTTP/1.1, c=CONNS: wrk, h2load --h1, webtune
#   - a new TLS connection per request, c=CONNS: wrk, webtune (sessions resumed, the
#     default) and webtune --no-tls-resume (a full handshake each)
#   - HTTP/2, 10 connections x 10 streams: h2load -c10 -m10, webtune --http2 -c 10 --streams 10
# Prints medians of requests/s and generator CPU µs per request (user+sys of the generator
# process / completed requests), and the ratio webtune / best peer.
#
#   bench/vs-tls.sh [ROUNDS] [SECONDS]        defaults: 3 rounds, 5 s per run
#   IO="epoll uring" bench/vs-tls.sh            webtune once per --io backend (the io column;
#                                               default both, one after the other in each round)
#   PERF=0 bench/vs-tls.sh                      skip perf stat (system calls, context switches per
#                                               request); PERF_RECORD=1 adds a profile of the h2 run
#   BASELINE=/path/to/webtune bench/vs-tls.sh   a second build's h2 rows too (base-h2-…), each
#                                               right after this build's: a before/after in one run
#   ROWS=h2 bench/vs-tls.sh                     only the HTTP/2 rows
#
# Runs are interleaved (A B C A B C ...) because this machine's noise is large. A benchmark,
# not a test: it asserts nothing.
set -euo pipefail
ROUNDS=${1:-3}
SECS=${2:-5}
CONNS=${CONNS:-100}
IO=${IO:-epoll uring}
source "$(dirname "$0")/lib.sh"
ensure_webtune
for tool in wrk h2load openssl python3; do
  command -v $tool >/dev/null || { echo "needs $tool (apt-get install wrk nghttp2-client openssl)"; exit 1; }
done
start_nginx
# A second server block on another port: TLS (and h2) with a certificate made here.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
  -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -addext basicConstraints=critical,CA:FALSE \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
tport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
sed -i "s|  server { listen|  ssl_session_cache shared:SSL:10m; ssl_protocols TLSv1.2 TLSv1.3;\n  server { listen 127.0.0.1:$tport ssl http2; root $work/www; ssl_certificate $work/cert.pem; ssl_certificate_key $work/key.pem; }\n  server { listen|" "$work/nginx.conf"
kill -HUP "$ngx"
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$tport) 2>/dev/null && break; sleep 0.05; done
sleep 0.3
TURL=https://127.0.0.1:$tport/empty.gif

rows="$work/rows"
# measure NAME CMD... : runs CMD under rusage.py, parses the request count, appends a row.
measure() {
  local name=$1; shift
  local out="$work/out" ru="$work/ru"
  python3 "$here/rusage.py" "$ru" -- "${client_pin[@]}" "$@" > "$out" 2>&1 || true
  local reqs secs
  case $name in
    wrk*) reqs=$(awk '/requests in/ {print $1}' "$out"); secs=$SECS ;;
    h2load*) reqs=$(awk '/^requests:/ {print $8}' "$out")
             secs=$(awk '/^finished in/ {gsub(/s,/, "", $3); print $3}' "$out") ;;
    webtune*|base*) reqs=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["responses"])' "$work/w.json")
              secs=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["duration_s"])' "$work/w.json") ;;
  esac
  read -r user sys rss code < "$ru"
  echo "$name ${reqs:-0} ${secs:-1} $user $sys $rss" >> "$rows"
}

echo "nginx 1 worker, TLS on $TURL; $ROUNDS rounds x ${SECS}s, c=$CONNS, 1 generator thread, --io $IO; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
  if [ "${ROWS:-all}" != h2 ]; then
  measure wrk-ka wrk -t1 -c"$CONNS" -d"${SECS}s" "$TURL"
  measure h2load-h1-ka h2load --h1 -t1 -c"$CONNS" -D"$SECS" "$TURL"
  for io in $IO; do
    measure webtune-ka-$io "$WEBTUNE" bench "$TURL" -t 1 -c "$CONNS" -d "${SECS}s" --io "$io" --insecure -q --json "$work/w.json"
  done
  measure wrk-close wrk -t1 -c"$CONNS" -d"${SECS}s" -H "Connection: close" "$TURL"
  for io in $IO; do
    measure webtune-close-$io "$WEBTUNE" bench "$TURL" -t 1 -c "$CONNS" -d "${SECS}s" --io "$io" --no-keepalive --insecure -q --json "$work/w.json"
    measure webtune-close-full-$io "$WEBTUNE" bench "$TURL" -t 1 -c "$CONNS" -d "${SECS}s" --io "$io" --no-keepalive --no-tls-resume --insecure -q --json "$work/w.json"
  done
  fi
  measure h2load-h2-10x10 h2load -t1 -c10 -m10 -D"$SECS" "$TURL"
  for io in $IO; do
    measure webtune-h2-10x10-$io "$WEBTUNE" bench "$TURL" -t 1 -c 10 --http2 --streams 10 -d "${SECS}s" --io "$io" --insecure -q --json "$work/w.json"
    [ -n "${BASELINE:-}" ] && measure base-h2-10x10-$io "$BASELINE" bench "$TURL" -t 1 -c 10 --http2 --streams 10 -d "${SECS}s" --io "$io" --insecure -q --json "$work/w.json"
  done
  echo "  round $r done"
done

echo "load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$rows" "$IO" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, reqs, secs, user, sys_, rss = line.split()
    reqs, secs, cpu = int(reqs), float(secs), float(user) + float(sys_)
    rows.setdefault(name, []).append((reqs / max(secs, 1e-9), 1e6 * cpu / max(reqs, 1)))
med = {k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v),
           min(r[1] for r in v), max(r[1] for r in v)) for k, v in rows.items()}
print(f"\n{'generator':<26}{'req/s (median)':>16}{'CPU us/req':>12}{'min-max':>16}")
for k, (rps, us, lo, hi) in med.items():
    print(f"{k:<26}{rps:>16.0f}{us:>12.2f}{f'{lo:.1f}-{hi:.1f}':>16}")
print()
def vs_best(ours, peers):
    have = [p for p in peers if p in med]
    if ours in med and have:
        best = min(have, key=lambda p: med[p][1])
        # also the ratio within each round (seconds apart), whose median is steadier on a
        # shared machine than a ratio of medians
        rounds = [a[1] / b[1] for a, b in zip(rows[ours], rows[best])]
        print(f"{ours} / {best} (best peer): CPU per request x{med[ours][1] / med[best][1]:.2f}, "
              f"req/s x{med[ours][0] / med[best][0]:.2f}; CPU per round x{statistics.median(rounds):.2f} ("
              + ", ".join(f"{x:.2f}" for x in rounds) + ")")
for io in sys.argv[2].split():
    vs_best(f"webtune-ka-{io}", ["wrk-ka", "h2load-h1-ka"])
    vs_best(f"webtune-close-{io}", ["wrk-close"])
    vs_best(f"webtune-close-full-{io}", ["wrk-close"])
    vs_best(f"webtune-h2-10x10-{io}", ["h2load-h2-10x10"])
    vs_best(f"base-h2-10x10-{io}", ["h2load-h2-10x10"])
PY

if [ "${PERF:-1}" = 1 ] && command -v perf >/dev/null; then
  # Where the CPU goes (perf's counters; needs root or perf_event_paranoid <= -1): system calls,
  # context switches and task-clock per completed request, keep-alive and h2, one run each.
  echo
  echo "perf stat, ${SECS}s each (per completed request):"
  if [ "${ROWS:-all}" != h2 ]; then
    perf_per_request wrk-ka wrk -t1 -c"$CONNS" -d"${SECS}s" "$TURL"
    for io in $IO; do perf_per_request "webtune-ka-$io" "$WEBTUNE" bench "$TURL" -t 1 -c "$CONNS" -d "${SECS}s" --io "$io" --insecure -q --json "$work/w.json"; done
  fi
  perf_per_request h2load-h2-10x10 h2load -t1 -c10 -m10 -D"$SECS" "$TURL"
  for io in $IO; do
    perf_per_request "webtune-h2-10x10-$io" "$WEBTUNE" bench "$TURL" -t 1 -c 10 --http2 --streams 10 -d "${SECS}s" --io "$io" --insecure -q --json "$work/w.json"
    [ -n "${BASELINE:-}" ] && perf_per_request "base-h2-10x10-$io" "$BASELINE" bench "$TURL" -t 1 -c 10 --http2 --streams 10 -d "${SECS}s" --io "$io" --insecure -q --json "$work/w.json"
  done
  if [ "${PERF_RECORD:-0}" = 1 ]; then
    # A call-graph profile of webtune's h2 run under the last backend: the top symbols, and
    # the HPACK decoder's share (ours and httlib-huffman's) of all samples.
    for who in webtune ${BASELINE:+base}; do
      bin=$WEBTUNE; [ "$who" = base ] && bin=$BASELINE
      perf record -g -o "$work/perf.data" -- "$bin" bench "$TURL" -t 1 -c 10 --http2 --streams 10 -d "${SECS}s" \
        --io "${IO##* }" --insecure -q > /dev/null 2>&1 || true
      perf report -i "$work/perf.data" --no-children --sort dso,sym --stdio -g none 2>/dev/null | grep -v '^#' | grep '%' > "$work/report"
      echo "perf record, $who --http2 -c 10 --streams 10 --io ${IO##* } (self time, top 25):"
      head -25 "$work/report"
      awk '/hpack|httlib_huffman/ {sub(/%/, "", $1); s += $1} END {printf "  HPACK decoding (hpack, httlib_huffman): %.2f%% of samples\n", s}' "$work/report"
    done
  fi
fi
