#!/usr/bin/env bash
# Decisive comparisons on a noisy machine (issue 34 item 4). A noisy neighbour switches a CPU
# load (one busy process per core) on and off at random every 2-8 s for the whole script;
# under it:
#   A/A:   AA_RUNS `lab compare nginx` runs with identical arms (worker_processes=1 both):
#          how many claim a difference (at most alpha of them should), the interval's width
#          and the MDE; beside them, the sequential protocol in the same time (3 pairs of
#          whole `lab run`s, A B B A …, Student-t interval of the mean log-ratio).
#   power: (POWER_RUNS, default 0) seed 000's stack, nginx-apache with backend.MaxRequestWorkers
#          4 vs 12 at -c 20 /cpu/20000: how many runs decide within the budget, and when.
#
#   bench/decisive.sh [AA_RUNS] [BUDGET]      defaults: 20 runs, 3m (the issue's figures)
#   bench/decisive.sh 6 30s                   a short look
#   POWER_RUNS=5 bench/decisive.sh 20 3m      and the power runs
#   NEIGHBOUR=0 bench/decisive.sh             no neighbour (a quiet machine, for contrast)
#   NEIGHBOUR_CORES=1 bench/decisive.sh       busy loops of the neighbour (default: every core)
#   LOAD="-c 4 -t 1 /empty.gif"               the bench flags of the A/A runs
#   POWER_DECIDE_ON=p99                       the power runs decide on p99 (the seed's question)
#                                             instead of closed loop's default, throughput
#   STARTS=3                                  --starts of every interleaved run (default: the
#                                             command's own, one per 15 pairs: 6 in 3m)
#   BLOCK=0.5s                                --block of every interleaved run (default: the
#                                             command's own, 1s)
#   SEQUENTIAL=0                              no sequential runs beside the interleaved ones
#                                             (A/A, and the power runs' sequential twins)
#   POWER_INTERLEAVED=0                       the power runs' sequential twins only
#   KEEP=DIR                                  keep every run's JSON (its blocks: to judge again
#                                             offline) and stderr in DIR
#
# A benchmark, not a test: it asserts nothing; it prints one line per run and the figures.
set -euo pipefail
AA_RUNS=${1:-20}
BUDGET=${2:-3m}
POWER_RUNS=${POWER_RUNS:-0}
POWER_DECIDE_ON=${POWER_DECIDE_ON:-}
POWER_INTERLEAVED=${POWER_INTERLEAVED:-1}
STARTS=${STARTS:-}
BLOCK=${BLOCK:-}
SEQUENTIAL=${SEQUENTIAL:-1}
NEIGHBOUR=${NEIGHBOUR:-1}
LOAD=${LOAD:--c 4 -t 1 /empty.gif}
KEEP=${KEEP:-}
source "$(dirname "$0")/lib.sh"
ensure_webtune
command -v python3 >/dev/null || { echo "needs python3"; exit 1; }
work=$(mktemp -d /tmp/webtune-decisive.XXXXXX)
chmod 755 "$work"   # the lab root inside it: Apache (www-data) must traverse it
export WEBTUNE_LAB_DIR="$work/lab"
neighbour_pid=
cleanup() {
  [ -n "$neighbour_pid" ] && kill -TERM "$neighbour_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  if [ -n "$KEEP" ]; then mkdir -p "$KEEP" && cp "$work"/*.json "$work"/*.err "$KEEP"/ 2>/dev/null || true; fi
  "$WEBTUNE" lab clean >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

# The neighbour: on for 2-8 s (one busy loop per core), off for 2-8 s, until killed.
neighbour() {
  local cores burners
  cores=${NEIGHBOUR_CORES:-$(nproc)}
  trap 'kill $burners 2>/dev/null; exit 0' TERM
  while :; do
    burners=
    for _ in $(seq "$cores"); do (while :; do :; done) & burners="$burners $!"; done
    sleep $((2 + RANDOM % 7))
    kill $burners 2>/dev/null; wait $burners 2>/dev/null || true
    burners=
    sleep $((2 + RANDOM % 7))
  done
}
if [ "$NEIGHBOUR" = 1 ]; then neighbour & neighbour_pid=$!; fi

seconds=$(python3 -c "
import re,sys; t='$BUDGET'; s=0
for n,u in re.findall(r'([0-9.]+)(ms|s|m|h)', t): s+=float(n)*{'ms':.001,'s':1,'m':60,'h':3600}[u]
print(int(s))")

echo "A/A: $AA_RUNS interleaved runs of lab compare nginx, budget $BUDGET, neighbour $NEIGHBOUR"
for i in $(seq "$AA_RUNS"); do
  # shellcheck disable=SC2086
  "$WEBTUNE" lab compare nginx --a worker_processes=1 --b worker_processes=1 --seed "$i" \
    ${STARTS:+--starts "$STARTS"} ${BLOCK:+--block "$BLOCK"} --budget "$BUDGET" --json "$work/aa$i.json" -- $LOAD >/dev/null 2>"$work/aa$i.err" || true
  python3 - "$work/aa$i.json" <<'PY'
import json,os,sys
if not os.path.exists(sys.argv[1]):
    err=open(sys.argv[1][:-5]+".err").read().strip().splitlines()
    print("  aa failed:", err[-1] if err else "?"); sys.exit(0)
j=json.load(open(sys.argv[1])); t=j["metrics"]["throughput"]
print(f"  aa {j['verdict']:<10} ratio x{t['ratio']:.3f} CI x{t['ci_low'] or 0:.3f}-x{t['ci_high'] or 0:.3f} "
      f"mde ±{100*(j['mde'] or 0):.1f}% after {j['decided_after_s'] or j['elapsed_s']:.0f} s")
PY
done

[ "$SEQUENTIAL" = 1 ] && echo "A/A sequential: 3 pairs of whole lab runs (A B B A A B) in the same $BUDGET, $AA_RUNS times"
run_s=$(( seconds / 6 > 1 ? seconds / 6 : 1 ))
for i in $(seq "$([ "$SEQUENTIAL" = 1 ] && echo "$AA_RUNS" || echo 0)"); do
  for k in 1 2 3 4 5 6; do
    # shellcheck disable=SC2086
    "$WEBTUNE" lab run nginx --set worker_processes=1 -- $LOAD -d "${run_s}s" -q \
      --json "$work/seq$i-$k.json" >/dev/null 2>&1 || true
  done
  python3 - "$work" "$i" <<'PY'
import json,math,sys
w,i=sys.argv[1],sys.argv[2]
try:
    rps=[json.load(open(f"{w}/seq{i}-{k}.json"))["requests_per_s"] for k in range(1,7)]
except OSError as e:
    print("  seq failed:", e); sys.exit(0)
# A B B A A B: pairs (run1,run2), (run4,run3), (run5,run6)
pairs=[(rps[0],rps[1]),(rps[3],rps[2]),(rps[4],rps[5])]
d=[math.log(b/a) for a,b in pairs]; n=len(d); m=sum(d)/n
sd=math.sqrt(sum((x-m)**2 for x in d)/(n-1)); half=4.303*sd/math.sqrt(n)
lo,hi=math.exp(m-half),math.exp(m+half)
v="difference" if lo>1 or hi<1 else "no difference"
print(f"  seq {v:<13} ratio x{math.exp(m):.3f} CI x{lo:.3f}-x{hi:.3f} half-width ±{100*(math.exp(half)-1):.1f}%")
PY
done

if [ "$POWER_RUNS" -gt 0 ]; then
  # Closed loop decides on throughput; the p99 interval is shown beside it.
  echo "power: $POWER_RUNS runs, nginx-apache MaxRequestWorkers 12 (A) vs 4 (B), -c 20 /cpu/20000"
  for i in $(seq "$POWER_RUNS"); do
    if [ "$SEQUENTIAL" = 1 ]; then
      # The sequential twin in the same time: 3 pairs of whole runs, A B B A A B, each a
      # stack start; p99 B/A by a Student-t interval of the pairs' log-ratios (one look).
      for k in 1 2 3 4 5 6; do
        case $k in 1|4|5) workers=12 ;; *) workers=4 ;; esac
        "$WEBTUNE" lab run nginx-apache --set backend.MaxRequestWorkers=$workers -- -c 20 \
          -d "${run_s}s" -q --json "$work/pseq$i-$k.json" /cpu/20000 >/dev/null 2>&1 || true
      done
      python3 - "$work" "$i" <<'PY'
import json,math,sys
w,i=sys.argv[1],sys.argv[2]
try:
    p99=[json.load(open(f"{w}/pseq{i}-{k}.json"))["latency"]["total"]["p99_us"] for k in range(1,7)]
except (OSError, KeyError) as e:
    print("  power seq failed:", e); sys.exit(0)
pairs=[(p99[0],p99[1]),(p99[3],p99[2]),(p99[4],p99[5])]
d=[math.log(b/a) for a,b in pairs]; n=len(d); m=sum(d)/n
sd=math.sqrt(sum((x-m)**2 for x in d)/(n-1)); half=4.303*sd/math.sqrt(n)
lo,hi=math.exp(m-half),math.exp(m+half)
v="b_better" if hi<1 else ("a_better" if lo>1 else "undecided")
print(f"  power seq {v:<10} p99 x{math.exp(m):.3f} (CI x{lo:.3f}-x{hi:.3f}) half-width ±{100*(math.exp(half)-1):.1f}%")
PY
    fi
    [ "$POWER_INTERLEAVED" = 1 ] || continue
    "$WEBTUNE" lab compare nginx-apache --a backend.MaxRequestWorkers=12 \
      --b backend.MaxRequestWorkers=4 --seed "$i" ${STARTS:+--starts "$STARTS"} ${BLOCK:+--block "$BLOCK"} \
      --budget "$BUDGET" --json "$work/pw$i.json" \
      ${POWER_DECIDE_ON:+--decide-on "$POWER_DECIDE_ON"} \
      -- -c 20 /cpu/20000 >/dev/null 2>"$work/pw$i.err" || true
    python3 - "$work/pw$i.json" <<'PY'
import json,os,sys
if not os.path.exists(sys.argv[1]):
    err=open(sys.argv[1][:-5]+".err").read().strip().splitlines()
    print("  power failed:", err[-1] if err else "?"); sys.exit(0)
j=json.load(open(sys.argv[1])); p=j["metrics"]["p99"]; t=j["metrics"]["throughput"]
print(f"  power {j['verdict']:<10} on {j['metric']:<10} throughput x{t['ratio']:.3f} p99 x{p['ratio']:.3f} "
      f"(CI x{p['ci_low'] or 0:.3f}-x{p['ci_high'] or 0:.3f}) "
      f"after {j['decided_after_s'] or j['elapsed_s']:.0f} s")
PY
  done
fi

python3 - "$work" "$AA_RUNS" "$POWER_RUNS" "$seconds" <<'PY'
import glob,json,math,statistics as st,sys
w,n,pn,budget=sys.argv[1],int(sys.argv[2]),int(sys.argv[3]),float(sys.argv[4])
aa=[json.load(open(f)) for f in sorted(glob.glob(f"{w}/aa*.json"))]
if not aa:
    aa=[]
fp=sum(j["verdict"] in ("a_better","b_better") for j in aa)
same=sum(j["verdict"]=="same" for j in aa)
def half(t): return (t["ci_high"]/t["ci_low"])**0.5-1 if t["ci_low"] else float("nan")
hw=[half(j["metrics"]["throughput"]) for j in aa]
if aa:
    print(f"A/A interleaved: {fp} of {len(aa)} claimed a difference, {same} said same; "
          f"interval half-width median ±{100*st.median(hw):.1f}% after median "
          f"{st.median([j['elapsed_s'] for j in aa]):.0f} s")
seq=[]
for i in range(1,n+1):
    try:
        rps=[json.load(open(f"{w}/seq{i}-{k}.json"))["requests_per_s"] for k in range(1,7)]
    except Exception:
        continue
    d=[math.log(b/a) for a,b in [(rps[0],rps[1]),(rps[3],rps[2]),(rps[4],rps[5])]]
    m=sum(d)/3; sd=math.sqrt(sum((x-m)**2 for x in d)/2); h=4.303*sd/math.sqrt(3)
    seq.append((math.exp(m-h)>1 or math.exp(m+h)<1, math.exp(h)-1))
if seq:
    print(f"A/A sequential: {sum(s[0] for s in seq)} of {len(seq)} claimed a difference; "
          f"interval half-width median ±{100*st.median([s[1] for s in seq]):.1f}% in {budget:.0f} s")
pw=[json.load(open(f)) for f in sorted(glob.glob(f"{w}/pw*.json"))]
if pw:
    dec=[j for j in pw if j["verdict"]!="undecided"]
    print(f"power: {len(dec)} of {len(pw)} decided ({', '.join(j['verdict'] for j in pw)}); "
          f"time to decision median {st.median([j['decided_after_s'] for j in dec]) if dec else float('nan'):.0f} s")
PY
