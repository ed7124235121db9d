#!/usr/bin/env bash
# HTTP/2 request bodies larger than the windows (issue 33 item 13): webtune vs h2load against
# stock `nghttpd --echo-upload` (h2c, loopback), 100 KB POSTs, CONNS connections x 10 streams,
# in the same run. A stream whose body gets no window waits; its latency shows in the maximum,
# so this prints each generator's requests/s, p99 and maximum latency, and webtune's maximum
# over h2load's. Before bodies shared the connection window oldest first, webtune's maximum
# was the whole run (1.49 s on a 1.49 s run) where h2load's was 39 ms.
#
#   bench/h2-uploads.sh [ROUNDS] [SECONDS]      defaults: 3 rounds, 5 s per run
#   CONNS=2 bench/h2-uploads.sh                   connections (default 2; 10 streams each)
#   WINDOW_BITS="14 15" bench/h2-uploads.sh       nghttpd's -w/-W: stream and connection window
#                                                 of 2^N-1 bytes (default nghttpd's, 65,535)
#   BASELINE=/path/to/webtune bench/h2-uploads.sh another build too, right after this one
#
# Runs are interleaved (h2load, webtune, [baseline], ...). A benchmark, not a test: it
# asserts nothing.
set -euo pipefail
ROUNDS=${1:-3}
SECS=${2:-5}
CONNS=${CONNS:-2}
source "$(dirname "$0")/lib.sh"
ensure_webtune
for tool in h2load nghttpd python3; do
  command -v $tool >/dev/null || { echo "needs $tool (apt-get install nghttp2-client nghttp2-server)"; exit 1; }
done
work=$(mktemp -d /tmp/webtune-bench.XXXXXX)
head -c 100000 /dev/zero | tr '\0' x > "$work/body"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
windows=()
if [ -n "${WINDOW_BITS:-}" ]; then
  read -r wb cwb <<< "$WINDOW_BITS"
  windows=(--window-bits="$wb" --connection-window-bits="$cwb")
fi
"${server_pin[@]}" nghttpd --no-tls --echo-upload -a 127.0.0.1 -d "$work" "${windows[@]}" "$port" > /dev/null 2>&1 &
srv=$!
trap 'kill -TERM $srv 2>/dev/null || true; wait $srv 2>/dev/null || true; rm -rf "$work"' EXIT INT TERM
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
URL=http://127.0.0.1:$port/echo

rows="$work/rows"
# measure NAME CMD...: one run; appends "NAME requests seconds p99_ms max_ms errors".
measure() {
  local name=$1; shift
  "${client_pin[@]}" "$@" > "$work/out" 2>&1 || true
  case $name in
    h2load*)
      # "requests: N total, N started, N done, N succeeded, N failed, N errored, N timeout"
      # "time for request:  min  max  mean  sd  +/- sd" (units per value: us, ms or s)
      python3 - "$work/out" "$name" >> "$rows" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
def ms(v):
    m = re.match(r"([\d.]+)(us|ms|s)", v)
    return float(m[1]) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[m[2]]
req = re.search(r"^requests: (\d+) total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed", text, re.M)
fin = re.search(r"^finished in ([\d.]+)s", text, re.M)
t = re.search(r"^time for request:\s+(\S+)\s+(\S+)", text, re.M)
print(sys.argv[2], req[2], fin[1], "-", f"{ms(t[2]):.1f}", req[3])
PY
      ;;
    *)
      python3 - "$work/w.json" "$name" >> "$rows" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
lat = r["latency"]["total"]
print(sys.argv[2], r["ok"], f'{r["duration_s"]:.3f}', f'{lat["p99_us"] / 1e3:.1f}',
      f'{lat["max_us"] / 1e3:.1f}', sum(r["errors"].values()))
PY
      ;;
  esac
}

wt_args=(bench "$URL" -t 1 -c "$CONNS" --http2 --streams 10 -m POST --body-file "$work/body"
         -d "${SECS}s" -q --json "$work/w.json")
echo "nghttpd --echo-upload ${WINDOW_BITS:+(window bits $WINDOW_BITS) }on $URL; 100 KB POSTs, c=$CONNS x 10 streams; $ROUNDS rounds x ${SECS}s; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
  measure h2load h2load -t1 -c"$CONNS" -m10 -D"$SECS" -d "$work/body" "$URL"
  measure webtune "$WEBTUNE" "${wt_args[@]}"
  [ -n "${BASELINE:-}" ] && measure baseline "$BASELINE" "${wt_args[@]}"
  echo "  round $r done"
done
echo "load at the end $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$rows" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, ok, secs, p99, mx, errors = line.split()
    rows.setdefault(name, []).append((int(ok) / max(float(secs), 1e-9), p99, float(mx), int(errors)))
print(f"\n{'generator':<12}{'req/s (median)':>16}{'p99 ms':>20}{'max ms (each round)':>28}{'errors':>8}")
for name, v in rows.items():
    rps = statistics.median(x[0] for x in v)
    p99 = ", ".join(x[1] for x in v)
    mx = ", ".join(f"{x[2]:.0f}" for x in v)
    print(f"{name:<12}{rps:>16.0f}{p99:>20}{mx:>28}{sum(x[3] for x in v):>8}")
print()
for name in ("webtune", "baseline"):
    if name in rows and "h2load" in rows:
        ratios = [a[2] / max(b[2], 1e-9) for a, b in zip(rows[name], rows["h2load"])]
        print(f"{name} / h2load, maximum latency per round: "
              + ", ".join(f"x{r:.2f}" for r in ratios) + f" (median x{statistics.median(ratios):.2f})")
PY
