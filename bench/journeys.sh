#!/usr/bin/env bash
# A journey against the same requests as a plain scenario, on the embedded target, in the same
# run: does a journey step (a user's cookies, its extracted values, the regex on the body) cost
# more generator CPU per request than a templated request of a mix? (issue 38 item 3)
#
#   bench/journeys.sh [ROUNDS] [SECONDS]     defaults: 3 rounds, 5 s per run
#   CONNS=32 THREADS=1 SERVE_WORKERS=1 bench/journeys.sh
#
# The mix: /login, /empty.gif?t=TOKEN, /bytes/100 at equal weights. The journey: the same three
# in order, /login's hidden field extracted by a regex and sent back in the next path, the
# jar carrying no cookie (GET /login sets none) — so the bytes on the wire are alike and the
# difference is the journey's own work. When `locust` is on the PATH (pip install locust), the
# same journey as a Locust FastHttpUser (regex on /login, the token in the next path) runs
# beside them with as many users, no wait. Runs are interleaved (mix, journey, locust, mix,
# ...) since this machine's noise is large; prints medians of requests/s and of the
# generator's CPU per request (user+sys of the whole process, start-up included, from
# bench/rusage.py: the same measure for every generator), and the ratios.
# A benchmark, not a test: it asserts nothing.
set -euo pipefail
ROUNDS=${1:-3}
SECS=${2:-5}
CONNS=${CONNS:-32}
THREADS=${THREADS:-1}
source "$(dirname "$0")/lib.sh"
ensure_webtune
work=$(mktemp -d /tmp/webtune-journeys.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"${server_pin[@]}" "$WEBTUNE" serve --addr "127.0.0.1:$port" --workers "${SERVE_WORKERS:-1}" 2>/dev/null &
srv=$!
trap 'kill -TERM $srv 2>/dev/null || true; wait $srv 2>/dev/null || true; rm -rf "$work"' EXIT INT TERM
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done

cat > "$work/mix.toml" <<'TOML'
[[request]]
name = "form"
path = "/login"
[[request]]
name = "gif"
path = "/empty.gif?t=0123456789abcdef"
[[request]]
name = "bytes"
path = "/bytes/100"
TOML
cat > "$work/journey.toml" <<'TOML'
[[journey]]
name = "walk"
[[journey.step]]
name = "form"
path = "/login"
extract = { csrf = 'name="csrf" value="([^"]+)"' }
[[journey.step]]
name = "gif"
path = "/empty.gif?t={var:csrf}"
[[journey.step]]
name = "bytes"
path = "/bytes/100"
TOML

cat > "$work/locustfile.py" <<'PY'
import re
from locust import FastHttpUser, task

CSRF = re.compile(r'name="csrf" value="([^"]+)"')

class Walk(FastHttpUser):
    @task
    def walk(self):
        r = self.client.get("/login", name="form")
        m = CSRF.search(r.text or "")
        if not m:
            return
        self.client.get("/empty.gif?t=" + m.group(1), name="gif")
        self.client.get("/bytes/100", name="bytes")
PY
kinds="mix journey"
command -v locust >/dev/null && kinds="$kinds locust" || echo "(locust not installed: pip install locust to compare)"
for r in $(seq "$ROUNDS"); do
  for kind in $kinds; do
    case $kind in
      locust)
        "${client_pin[@]}" python3 "$here/rusage.py" "$work/$kind-$r.cpu" -- locust -f "$work/locustfile.py" \
          --headless -u "$CONNS" -r "$CONNS" -t "${SECS}s" --host "http://127.0.0.1:$port" \
          --csv "$work/$kind-$r" --only-summary --loglevel ERROR > /dev/null 2>&1 || true ;;
      *)
        "${client_pin[@]}" python3 "$here/rusage.py" "$work/$kind-$r.cpu" -- "$WEBTUNE" bench \
          --scenario "$work/$kind.toml" "http://127.0.0.1:$port" \
          -t "$THREADS" -c "$CONNS" -d "${SECS}s" -q --json "$work/$kind-$r.json" ;;
    esac
  done
done

python3 - "$work" "$ROUNDS" "$SECS" "$kinds" <<'PY'
import csv, json, statistics, sys
work, rounds, secs, kinds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4].split()
def figures(kind):
    rps, cpu = [], []
    for r in range(1, rounds + 1):
        user, sys_, _, _ = open(f"{work}/{kind}-{r}.cpu").read().split()
        if kind == "locust":
            rows = list(csv.DictReader(open(f"{work}/{kind}-{r}_stats.csv")))
            agg = next(x for x in rows if x["Name"] == "Aggregated")
            n, failed, seconds = int(agg["Request Count"]), int(agg["Failure Count"]), secs
        else:
            j = json.load(open(f"{work}/{kind}-{r}.json"))
            n, failed, seconds = j["responses"], sum(j["errors"].values()), j["duration_s"]
        if failed:
            print(f"  note: {kind} round {r}: {failed} failed requests")
        rps.append(n / seconds)
        cpu.append(1e6 * (float(user) + float(sys_)) / max(n, 1))
    return statistics.median(rps), statistics.median(cpu)
got = {k: figures(k) for k in kinds}
print(f"{'generator':<16}{'req/s (median)':>16}{'CPU us/req':>12}")
for k, (rps, cpu) in got.items():
    print(f"{'webtune ' + k if k != 'locust' else 'locust (fast)':<16}{rps:>16.0f}{cpu:>12.2f}")
m, j = got["mix"], got["journey"]
print(f"journey / mix: req/s {j[0] / m[0]:.2f}, CPU per request {j[1] / m[1]:.2f}")
if "locust" in got:
    l = got["locust"]
    print(f"locust / webtune journey: req/s {l[0] / j[0]:.2f}, CPU per request {l[1] / j[1]:.1f}")
PY
