#!/usr/bin/env bash
# webtune --http3 against the HTTP/3 clients that install here, and against our own --http2,
# on the same Caddy (Debian's caddy 2.6: HTTP/1.1, HTTP/2 and HTTP/3 on one port, 43-byte
# empty.gif, self-signed P-256, no access log), in the same run, one generator thread:
#   - HTTP/3, C connections x S streams: webtune --http3, oha --http-version 3 -c C*S (when OHA
#     or `oha` in PATH was built with its http3 feature: cargo install oha --locked --features
#     http3; measured with oha 1.16.0, which opens one QUIC connection per -c and has no
#     streams-per-connection option)
#   - HTTP/2, the same C x S over TCP+TLS: webtune --http2, h2load -m S
# curl (Debian's is built without HTTP/3) and h2load (without ngtcp2) cannot speak h3 here.
# Prints medians of requests/s and generator CPU µs per request (user+sys of the generator
# process / completed requests), the ratio webtune / best HTTP/3 peer, and what QUIC costs
# us over our own h2 (webtune-h3 / webtune-h2).
#
#   bench/vs-h3.sh [ROUNDS] [SECONDS]      defaults: 3 rounds, 5 s per run
#   C=10 S=10 bench/vs-h3.sh                connections and streams per connection
#   OHA=/path/to/oha bench/vs-h3.sh         the oha to use
#
# Runs are interleaved (A B C A B C ...) because this machine's noise is large. A benchmark,
# not a test: it asserts nothing.
set -euo pipefail
ROUNDS=${1:-3}
SECS=${2:-5}
C=${C:-10}
S=${S:-10}
source "$(dirname "$0")/lib.sh"
ensure_webtune
for tool in caddy h2load openssl python3; do
  command -v $tool >/dev/null || { echo "needs $tool (apt-get install caddy nghttp2-client openssl)"; exit 1; }
done
OHA=${OHA:-$(command -v oha || true)}

work=$(mktemp -d /tmp/webtune-bench-h3.XXXXXX)
mkdir -p "$work/www" "$work/home"
printf 'GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff\x21\xf9\x04\x01\x00\x00\x00\x00\x2c\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02\x44\x01\x00\x3b' > "$work/www/empty.gif"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
  -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -addext basicConstraints=critical,CA:FALSE \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$work/caddy.json" <<JSON
{"admin": {"disabled": true, "config": {"persist": false}},
 "storage": {"module": "file_system", "root": "$work/data"},
 "logging": {"logs": {"default": {"writer": {"output": "file", "filename": "$work/caddy.log"}}}},
 "apps": {"http": {"servers": {"bench": {
    "listen": ["127.0.0.1:$port"], "protocols": ["h1", "h2", "h3"],
    "automatic_https": {"disable": true},
    "tls_connection_policies": [{"certificate_selection": {"any_tag": ["bench"]}}],
    "routes": [{"handle": [{"handler": "vars", "root": "$work/www"}, {"handler": "file_server"}]}]}}},
  "tls": {"certificates": {"load_files": [{"certificate": "$work/cert.pem", "key": "$work/key.pem", "tags": ["bench"]}]}}}}
JSON
HOME="$work/home" XDG_DATA_HOME="$work/data" XDG_CONFIG_HOME="$work/home" \
  "${server_pin[@]}" caddy run --config "$work/caddy.json" > "$work/caddy.out" 2>&1 &
cad=$!
trap 'kill -TERM $cad 2>/dev/null || true; wait $cad 2>/dev/null || true; rm -rf "$work"' EXIT INT TERM
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
sleep 0.3
URL=https://127.0.0.1:$port/empty.gif

rows="$work/rows"
# measure NAME CMD... : runs CMD under rusage.py, parses the request count, appends a row.
measure() {
  local name=$1; shift
  local out="$work/out" ru="$work/ru"
  python3 "$here/rusage.py" "$ru" -- "${client_pin[@]}" "$@" > "$out" 2>&1 || true
  local reqs secs
  case $name in
    h2load*) reqs=$(awk '/^requests:/ {print $8}' "$out")
             secs=$(awk '/^finished in/ {gsub(/s,/, "", $3); print $3}' "$out") ;;
    oha*) reqs=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(d["statusCodeDistribution"].values()))' "$out" 2>/dev/null || echo 0)
          # oha 1.16's HTTP/3 run ends ~30 s after -z (its connections wait out QUIC's idle
          # timeout), so its summary's total is not the load's duration: the load ran -z.
          secs=$SECS ;;
    webtune*) reqs=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ok"])' "$work/w.json")
              secs=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["duration_s"])' "$work/w.json") ;;
  esac
  read -r user sys rss code < "$ru"
  echo "$name ${reqs:-0} ${secs:-1} $user $sys $rss" >> "$rows"
}

echo "caddy $(HOME="$work/home" caddy version | cut -d' ' -f1) on $URL (h1 h2 h3); $ROUNDS rounds x ${SECS}s, ${C} connections x ${S} streams, 1 generator thread; oha: ${OHA:-none}; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
  measure webtune-h3 "$WEBTUNE" bench "$URL" -t 1 -c "$C" --http3 --streams "$S" -d "${SECS}s" --insecure -q --json "$work/w.json"
  [ -n "$OHA" ] && measure oha-h3 "$OHA" --no-tui --output-format json --insecure --http-version 3 -c $((C * S)) -z "${SECS}s" "$URL"
  measure webtune-h2 "$WEBTUNE" bench "$URL" -t 1 -c "$C" --http2 --streams "$S" -d "${SECS}s" --insecure -q --json "$work/w.json"
  measure h2load-h2 h2load -t1 -c"$C" -m"$S" -D"$SECS" "$URL"
  echo "  round $r done"
done

echo "load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$rows" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, reqs, secs, user, sys_, rss = line.split()
    reqs, secs, cpu = int(reqs), float(secs), float(user) + float(sys_)
    rows.setdefault(name, []).append((reqs / max(secs, 1e-9), 1e6 * cpu / max(reqs, 1)))
med = {k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v),
           min(r[1] for r in v), max(r[1] for r in v)) for k, v in rows.items()}
print(f"\n{'generator':<16}{'req/s (median)':>16}{'CPU us/req':>12}{'min-max':>16}")
for k, (rps, us, lo, hi) in med.items():
    print(f"{k:<16}{rps:>16.0f}{us:>12.2f}{f'{lo:.1f}-{hi:.1f}':>16}")
print()
def ratio(ours, other, what):
    if ours in med and other in med:
        rounds = [a[1] / b[1] for a, b in zip(rows[ours], rows[other])]
        print(f"{ours} / {other} ({what}): CPU per request x{med[ours][1] / med[other][1]:.2f}, "
              f"req/s x{med[ours][0] / med[other][0]:.2f}; CPU per round x{statistics.median(rounds):.2f} ("
              + ", ".join(f"{x:.2f}" for x in rounds) + ")")
ratio("webtune-h3", "oha-h3", "best HTTP/3 peer")
ratio("webtune-h2", "h2load-h2", "best HTTP/2 peer")
ratio("webtune-h3", "webtune-h2", "what QUIC costs us")
PY
