#!/usr/bin/env bash
# webtune vs wrk (and ab) against the same nginx, in the same run: requests/s and the
# generator's own CPU per request (user+sys of the generator process / completed requests).
#
#   bench/vs-wrk.sh [ROUNDS] [SECONDS]        defaults: 3 rounds, 5 s per run
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
source "$(dirname "$0")/lib.sh"
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

echo "nginx 1 worker on $URL; $ROUNDS rounds x ${SECS}s, c=$CONNS, t=$THREADS; $(nproc) cores${SERVER_CPUS:+; nginx on CPU $SERVER_CPUS, client on CPU $CLIENT_CPUS}"
for r in $(seq "$ROUNDS"); do
  measure wrk-ka wrk -t"$THREADS" -c"$CONNS" -d"${SECS}s" "$URL"
  measure webtune-ka "$WEBTUNE" bench "$URL" -t "$THREADS" -c "$CONNS" -d "${SECS}s" -q --json "$work/w.json"
  measure wrk-close wrk -t"$THREADS" -c"$CONNS" -d"${SECS}s" -H "Connection: close" "$URL"
  measure ab-close ab -q -t "$SECS" -n 10000000 -c "$CONNS" "$URL"
  measure webtune-close "$WEBTUNE" bench "$URL" -t "$THREADS" -c "$CONNS" -d "${SECS}s" --no-keepalive -q --json "$work/w.json"
  echo "  round $r done"
done

python3 - "$rows" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, reqs, secs, user, sys_, rss = line.split()
    reqs, secs, cpu = int(reqs), float(secs), float(user) + float(sys_)
    rows.setdefault(name, []).append((reqs / secs, 1e6 * cpu / max(reqs, 1), float(sys_) / max(cpu, 1e-9)))
med = {k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v),
           statistics.median(r[2] for r in v), min(r[0] for r in v), max(r[0] for r in v)) for k, v in rows.items()}
print(f"\n{'generator':<15}{'req/s (median)':>16}{'min-max':>20}{'CPU us/req':>12}{'sys share':>11}")
for k, (rps, us, sysf, lo, hi) in med.items():
    print(f"{k:<15}{rps:>16.0f}{f'{lo:.0f}-{hi:.0f}':>20}{us:>12.2f}{sysf:>10.0%}")
def ratio(a, b):
    if a in med and b in med:
        print(f"{a} / {b}: req/s x{med[a][0]/med[b][0]:.2f}, CPU per request x{med[a][1]/med[b][1]:.2f}")
print()
ratio("webtune-ka", "wrk-ka")
ratio("webtune-close", "wrk-close")
ratio("webtune-close", "ab-close")
PY

echo
echo "webtune RSS with 10,000 open connections (keep-alive, 5 s):"
"${client_pin[@]}" "$WEBTUNE" bench "$URL" -t "$THREADS" -c 10000 -d 5s -q --json "$work/w10k.json" || true
python3 - "$work/w10k.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
g = r["generator"]
print(f"  {r['connections_opened']} connections, {r['responses']} responses, "
      f"errors {sum(r['errors'].values())}, peak RSS {g['max_rss_kib'] / 1024:.1f} MiB")
PY
