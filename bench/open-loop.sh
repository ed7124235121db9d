#!/usr/bin/env bash
# webtune's open loop near this machine's capacity, against nginx (1 worker, empty.gif):
# first a closed-loop run finds the capacity, then open-loop runs at 50%, 80% and 95% of it.
# Prints achieved vs requested rate, schedule lag p50/p99, requests not sent, the verdict,
# and the generator's CPU per request beside the closed loop's.
#
#   bench/open-loop.sh [SECONDS]        default 5 s per run
set -euo pipefail
SECS=${1:-5}
THREADS=${THREADS:-1}
source "$(dirname "$0")/lib.sh"
ensure_webtune
start_nginx

run() { "$WEBTUNE" bench "$URL" -t "$THREADS" -d "${SECS}s" -q --json "$work/$1.json" "${@:2}"; }
run closed -c 100
cap=$(python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["requests_per_s"]))' "$work/closed.json")
echo "nginx 1 worker on $URL; closed loop c=100 reached $cap req/s; ${SECS}s per run, t=$THREADS"
for pct in 50 80 95; do
  run "open$pct" --rate $((cap * pct / 100)) -c 1000
done
python3 - "$work" <<'PY'
import json, sys, os
work = sys.argv[1]
def load(name):
    return json.load(open(os.path.join(work, name + ".json")))
print(f"\n{'run':<10}{'requested/s':>12}{'sent/s':>10}{'lag p50 ms':>11}{'lag p99 ms':>11}{'not sent':>9}"
      f"{'p99 ms':>8}{'CPU us/req':>11}  verdict")
for name in ["closed", "open50", "open80", "open95"]:
    r = load(name)
    g = r["generator"]
    cpu = 1e6 * (g["user_cpu_s"] + g["system_cpu_s"]) / max(r["responses"], 1)
    s = r.get("schedule")
    req = f"{s['requested_rate']:.0f}" if s else "-"
    sent = f"{s['achieved_rate']:.0f}" if s else f"{r['requests_per_s']:.0f}"
    lag50 = f"{s['lag']['p50_us'] / 1000:.3f}" if s else "-"
    lag99 = f"{s['lag']['p99_us'] / 1000:.3f}" if s else "-"
    ns = str(s["not_sent"]) if s else "-"
    v = r["validity"]
    verdict = "client-limited: " + "; ".join(v["reasons"]) if v["client_limited"] else "valid"
    print(f"{name:<10}{req:>12}{sent:>10}{lag50:>11}{lag99:>11}{ns:>9}"
          f"{r['latency']['total']['p99_us'] / 1000:>8.2f}{cpu:>11.2f}  {verdict}")
PY
