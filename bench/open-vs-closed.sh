#!/usr/bin/env bash
# webtune's open loop against its own closed loop, one generator thread, same nginx (1 worker,
# 43-byte empty.gif, keep-alive, loopback): each round first measures the closed-loop capacity
# (c=100), then runs the open loop (uniform arrivals) at 50% and 90% of that round's capacity.
# Prints, per round and as min/median over the rounds, the generator's CPU per request
# (user+sys of its worker threads, from the result JSON ÷ completed requests), the ratio
# open/closed, and the schedule lag p99 (and generator lag p99) at 90%.
#
# The target (issue 9): open-loop CPU per request at 50% ≤ 1.1× the closed loop's, and 90% of
# the closed-loop capacity held with schedule lag p99 under 1 ms on one thread.
#
# wrk2 (the usual open-loop peer) is not packaged in Debian, so it is not run here; the
# closed loop of the same generator on the same nginx is the yardstick instead.
# bench/vs-wrk2.sh builds wrk2 from source (pinned) and runs it beside both --io backends.
#
#   bench/open-vs-closed.sh [ROUNDS] [SECONDS]     defaults: 3 rounds, 3 s per run
#   WEBTUNE=/path/to/other/webtune bench/open-vs-closed.sh   # compare two builds
#   IO="epoll uring" bench/open-vs-closed.sh                  # --io backends, interleaved in
#                                                             # each round (default epoll);
#   uring-timerfd: io_uring woken by a timerfd as epoll is (WEBTUNE_URING_TIMERFD=1), not by
#   its wait's own timeout; epoll-each: one wake-up per answer (WEBTUNE_NO_ANSWER_BATCH=1);
#   epoll@base: the build in $WEBTUNE_BASE (bench/lib.sh, webtune_variant), e.g.
#   WEBTUNE_BASE=/tmp/main/webtune IO="epoll@base epoll" bench/open-vs-closed.sh 4 3
set -euo pipefail
ROUNDS=${1:-3}
SECS=${2:-3}
CONNS=${CONNS:-100}
IO=${IO:-epoll}
source "$(dirname "$0")/lib.sh"
ensure_webtune
command -v python3 >/dev/null || { echo "needs python3"; exit 1; }
start_nginx

# run IO NAME [ARGS]: one run of webtune under backend IO of $IO, its result in NAME.json.
run() {
  webtune_variant "$1"
  "${client_pin[@]}" "${variant_cmd[@]}" bench "$URL" -t 1 -c "$CONNS" -d "${SECS}s" -q \
    --io "$variant_io" --json "$work/$2.json" "${@:3}" || true
}
capacity() {
  python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["requests_per_s"]))' "$1"
}

echo "nginx 1 worker on $URL; $ROUNDS rounds x ${SECS}s, c=$CONNS, t=1, --io $IO; $(nproc) cores; $WEBTUNE; load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
  for io in $IO; do
    run "$io" "${io}_closed$r"
    cap=$(capacity "$work/${io}_closed$r.json")
    run "$io" "${io}_open50_$r" --rate $((cap * 50 / 100))
    run "$io" "${io}_open90_$r" --rate $((cap * 90 / 100))
    echo "  round $r $io done (capacity $cap req/s)"
  done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

for io in $IO; do
echo
echo "--io $io"
python3 - "$work" "$ROUNDS" "$io" <<'PY'
import json, os, statistics, sys
work, rounds, io = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def load(name):
    return json.load(open(os.path.join(work, f"{io}_{name}.json")))
def cpu_us(r):
    g = r["generator"]
    return 1e6 * (g["user_cpu_s"] + g["system_cpu_s"]) / max(r["responses"], 1)
rows = {"closed": [], "open50": [], "open90": []}
print(f"\n{'round':<6}{'run':<8}{'requested/s':>12}{'sent/s':>10}{'CPU us/req':>11}{'x closed':>9}"
      f"{'lag p99 ms':>11}{'gen lag p99':>12}  verdict")
for i in range(1, rounds + 1):
    closed = load(f"closed{i}")
    base = cpu_us(closed)
    for name, r in [("closed", closed), ("open50", load(f"open50_{i}")), ("open90", load(f"open90_{i}"))]:
        s = r.get("schedule")
        us = cpu_us(r)
        lag = s["lag"]["p99_us"] / 1000 if s else None
        glag = s["generator_lag"]["p99_us"] / 1000 if s else None
        sent = s["achieved_rate"] if s else r["requests_per_s"]
        rows[name].append((us, us / base, lag, glag, sent / s["requested_rate"] if s else 1.0))
        v = r["validity"]
        verdict = "client-limited: " + "; ".join(v["reasons"]) if v["client_limited"] else "valid"
        req = f"{s['requested_rate']:.0f}" if s else "-"
        print(f"{i:<6}{name:<8}{req:>12}{sent:>10.0f}"
              f"{us:>11.2f}{us / base:>9.2f}{(f'{lag:.3f}' if s else '-'):>11}"
              f"{(f'{glag:.3f}' if s else '-'):>12}  {verdict}")
print(f"\n{'run':<8}{'CPU us/req min / median':>25}{'x closed min / median':>23}{'lag p99 ms min / median':>25}"
      f"{'sent/requested':>16}")
for name, v in rows.items():
    us = [x[0] for x in v]; ratio = [x[1] for x in v]
    lags = [x[2] for x in v if x[2] is not None]
    held = [x[4] for x in v]
    lag_s = f"{min(lags):.3f} / {statistics.median(lags):.3f}" if lags else "-"
    print(f"{name:<8}{f'{min(us):.2f} / {statistics.median(us):.2f}':>25}"
          f"{f'{min(ratio):.2f} / {statistics.median(ratio):.2f}':>23}{lag_s:>25}"
          f"{f'{min(held):.3f}':>16}")
PY
done
