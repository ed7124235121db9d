#!/usr/bin/env bash
# webtune's open loop against wrk2's, at the same target rate (50% of the closed-loop capacity
# measured in the same round), one generator thread, c=100, the same nginx (1 worker, 43-byte
# empty.gif, keep-alive, loopback). Per round, interleaved:
#   closed loop: webtune --io epoll, webtune --io uring (the capacity is epoll's rate)
#   open loop at RATE_PCT% of it: wrk2 -R, webtune --rate --io epoll, webtune --rate --io uring
# Prints medians of the generator's CPU µs per request (user+sys of the whole process from
# getrusage, bench/rusage.py, the same for every tool), open ÷ its own closed loop, webtune ÷
# wrk2, and the latency each tool reports at that rate (both correct for coordinated omission:
# latency from each request's intended start).
#
#   bench/vs-wrk2.sh [ROUNDS] [OPEN_SECONDS]   defaults: 3 rounds, 15 s per open-loop run
#   WRK2_SRC=DIR bench/vs-wrk2.sh              build wrk2 from this source tree
#   WRK2=/path/to/wrk2 bench/vs-wrk2.sh        use a wrk2 binary already built
#   CLOSED_SECS=3 RATE_PCT=50 IO="epoll uring" (defaults; IO takes bench/lib.sh's variants,
#   e.g. WEBTUNE_BASE=/tmp/main/webtune IO="epoll epoll@base uring uring@base": two builds)
#   PERF=0 bench/vs-wrk2.sh                    skip the perf stat per request at the end
#
# wrk2 is not packaged in Debian: it is built here from giltene/wrk2 at the pinned commit
# below (from $WRK2_SRC, which must be a checkout of that commit, or from a local git mirror,
# $WRK2_MIRROR, default /work/.mirror/giltene+wrk2/repo) into a private directory
# ($WRK2_DIR, default ~/.cache/webtune-bench/wrk2-<commit>). It needs make, a C compiler and
# libssl-dev (apt-get install build-essential libssl-dev); its bundled LuaJIT 2.0 is used,
# and when that does not build (or WRK2_LUAJIT=system), Debian's (apt-get install
# libluajit-5.1-dev luajit).
#
# wrk2 calibrates for its first 10 s (+5 ms per connection) and resets its latency histogram
# after it, so its latency percentiles cover only the rest of the run: keep OPEN_SECONDS ≥ 15.
# Its request count ("N requests in") covers the whole run, as does its CPU, so CPU per
# request is comparable. A benchmark, not a test: it asserts nothing.
set -euo pipefail
ROUNDS=${1:-3}
OSECS=${2:-15}
CSECS=${CLOSED_SECS:-3}
CONNS=${CONNS:-100}
RATE_PCT=${RATE_PCT:-50}
IO=${IO:-epoll uring}
WRK2_COMMIT=44a94c17d8e6a0bac8559b53da76848e430cb7a7
WRK2_WRK_C=1049f0b2e8b6a4e19871d884678ccdd1a8561781   # git blob of src/wrk.c at that commit
WRK2_MIRROR=${WRK2_MIRROR:-/work/.mirror/giltene+wrk2/repo}
WRK2_DIR=${WRK2_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/webtune-bench/wrk2-${WRK2_COMMIT:0:7}}
source "$(dirname "$0")/lib.sh"
ensure_webtune
for tool in python3 make cc; do
  command -v $tool >/dev/null || { echo "bench/vs-wrk2.sh: needs $tool (apt-get install build-essential python3)"; exit 1; }
done

# build_wrk2: sets WRK2 to a built binary, or exits with one line saying why not.
build_wrk2() {
  if [ -n "${WRK2:-}" ]; then
    [ -x "$WRK2" ] || { echo "bench/vs-wrk2.sh: WRK2=$WRK2 is not an executable"; exit 1; }
    return
  fi
  WRK2=$WRK2_DIR/wrk
  [ -x "$WRK2" ] && return
  command -v git >/dev/null || { echo "bench/vs-wrk2.sh: needs git (apt-get install git)"; exit 1; }
  [ -f /usr/include/openssl/ssl.h ] || { echo "bench/vs-wrk2.sh: building wrk2 needs libssl-dev (apt-get install libssl-dev)"; exit 1; }
  local src
  if [ -n "${WRK2_SRC:-}" ]; then
    [ -d "$WRK2_SRC" ] || { echo "bench/vs-wrk2.sh: WRK2_SRC=$WRK2_SRC is not a directory"; exit 1; }
    if git -C "$WRK2_SRC" rev-parse HEAD >/dev/null 2>&1; then
      local head; head=$(git -C "$WRK2_SRC" rev-parse HEAD)
      [ "$head" = "$WRK2_COMMIT" ] || { echo "bench/vs-wrk2.sh: WRK2_SRC is at $head, not the pinned $WRK2_COMMIT"; exit 1; }
    elif [ "$(git hash-object "$WRK2_SRC/src/wrk.c" 2>/dev/null)" != "$WRK2_WRK_C" ]; then
      # A plain source tree (no .git): its src/wrk.c must be the pinned commit's.
      echo "bench/vs-wrk2.sh: WRK2_SRC/src/wrk.c is not wrk2 ${WRK2_COMMIT:0:7}'s (git blob $WRK2_WRK_C)"; exit 1
    fi
    src=$(mktemp -d /tmp/wrk2-src.XXXXXX)
    cp -a "$WRK2_SRC/." "$src/"
  elif git -C "$WRK2_MIRROR" cat-file -e "$WRK2_COMMIT^{commit}" 2>/dev/null; then
    src=$(mktemp -d /tmp/wrk2-src.XXXXXX)
    git -C "$WRK2_MIRROR" archive "$WRK2_COMMIT" | tar -x -C "$src"
  else
    echo "bench/vs-wrk2.sh: wrk2 not found: set WRK2=binary, WRK2_SRC=checkout of giltene/wrk2 at $WRK2_COMMIT, or WRK2_MIRROR=git dir (git clone https://github.com/giltene/wrk2)"
    exit 1
  fi
  echo "building wrk2 ${WRK2_COMMIT:0:7} in $src (log: $src/build.log)" >&2
  if [ "${WRK2_LUAJIT:-bundled}" = system ] || ! make -C "$src" -j"$(nproc)" > "$src/build.log" 2>&1; then
    # The bundled LuaJIT 2.0 fails on some toolchains: link Debian's LuaJIT instead.
    if [ -f /usr/include/luajit-2.1/lua.h ] && command -v luajit >/dev/null; then
      echo "building wrk2 against Debian's libluajit-5.1" >&2
      mkdir -p "$src/obj"
      (cd "$src" && luajit -b src/wrk.lua obj/bytecode.o &&
        for f in wrk net ssl aprintf stats script units ae zmalloc http_parser tinymt64 hdr_histogram; do
          cc -std=c99 -O2 -D_REENTRANT -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -DluaL_reg=luaL_Reg -I/usr/include/luajit-2.1 \
            -c -o obj/$f.o src/$f.c || exit 1
        done &&
        cc -Wl,-E -o wrk obj/*.o -lluajit-5.1 -lpthread -lm -lcrypto -lssl -ldl) >> "$src/build.log" 2>&1 ||
        { echo "bench/vs-wrk2.sh: wrk2 did not build (see $src/build.log)"; exit 1; }
    else
      echo "bench/vs-wrk2.sh: wrk2's bundled LuaJIT did not build (see $src/build.log); apt-get install libluajit-5.1-dev luajit and re-run"
      exit 1
    fi
  fi
  mkdir -p "$WRK2_DIR"
  cp "$src/wrk" "$WRK2_DIR/wrk"
  rm -rf "$src"
}
build_wrk2
{ "$WRK2" -v 2>&1 || true; } | grep -q -- '--rate' || { echo "bench/vs-wrk2.sh: $WRK2 does not run"; exit 1; }
start_nginx

rows="$work/rows"
# measure NAME CMD... : runs CMD under rusage.py; appends "NAME reqs secs user sys p50 p99 p999".
measure() {
  local name=$1; shift
  local out="$work/out" ru="$work/ru"
  python3 "$here/rusage.py" "$ru" -- "${client_pin[@]}" "$@" > "$out" 2>&1 || true
  local stats
  case $name in
    wrk2*) stats=$(python3 - "$out" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
m = re.search(r"(\d+) requests in ([\d.]+)(m?s)", t)
reqs, secs = int(m.group(1)), float(m.group(2)) * (60 if m.group(3) == "m" else 1)
def pct(p):
    # the corrected HdrHistogram block comes first in wrk2's --latency output
    m = re.search(r"^\s*%s%%\s+([\d.]+)(us|ms|s)\b" % re.escape(p), t, re.M)
    if not m: return "nan"
    return str(float(m.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)])
print(reqs, secs, pct("50.000"), pct("99.000"), pct("99.900"))
PY
) ;;
    webtune*) stats=$(python3 - "$work/w.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
t = r["latency"]["total"]
print(r["responses"], r["duration_s"], t["p50_us"] / 1e3, t["p99_us"] / 1e3, t["p999_us"] / 1e3)
PY
) ;;
  esac
  read -r user sys rss code < "$ru"
  echo "$name $stats $user $sys" >> "$rows"
  echo "$name $stats $user $sys" >> "$work/last_round"
}
# wt IO: the webtune command line of variant IO (bench/lib.sh), as the array wt_cmd.
wt() {
  webtune_variant "$1"
  wt_cmd=("${variant_cmd[@]}" bench "$URL" -t 1 -c "$CONNS" -q --json "$work/w.json" --io "$variant_io")
}

echo "nginx 1 worker on $URL; $ROUNDS rounds: closed ${CSECS}s, open ${OSECS}s at ${RATE_PCT}%, c=$CONNS, t=1; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg); wrk2 ${WRK2_COMMIT:0:7}"
for r in $(seq "$ROUNDS"); do
  : > "$work/last_round"
  for io in $IO; do wt "$io"; measure "webtune-closed-$io" "${wt_cmd[@]}" -d "${CSECS}s"; done
  cap=$(awk '$1=="webtune-closed-'"${IO%% *}"'" {printf "%d", $2 / $3}' "$work/last_round")
  rate=$((cap * RATE_PCT / 100))
  measure wrk2-open "$WRK2" -t1 -c"$CONNS" -d"${OSECS}s" -R"$rate" --latency "$URL"
  for io in $IO; do wt "$io"; measure "webtune-open-$io" "${wt_cmd[@]}" -d "${OSECS}s" --rate "$rate"; done
  echo "  round $r done (capacity $cap req/s, open loop at $rate req/s; load $(cut -d' ' -f1-3 /proc/loadavg))"
done

python3 - "$rows" "$IO" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, reqs, secs, p50, p99, p999, user, sys_ = line.split()
    reqs, secs = int(reqs), float(secs)
    rows.setdefault(name, []).append((reqs / secs, 1e6 * (float(user) + float(sys_)) / max(reqs, 1),
                                      float(p50), float(p99), float(p999)))
med = {k: [statistics.median(r[i] for r in v) for i in range(5)] for k, v in rows.items()}
rng = {k: (min(r[1] for r in v), max(r[1] for r in v)) for k, v in rows.items()}
print(f"\n{'generator':<22}{'req/s':>9}{'CPU us/req':>12}{'min-max':>14}{'p50 ms':>9}{'p99 ms':>9}{'p99.9 ms':>10}")
for k, (rps, us, p50, p99, p999) in med.items():
    lat = f"{p50:>9.3f}{p99:>9.3f}{p999:>10.3f}" if "open" in k else ""
    print(f"{k:<22}{rps:>9.0f}{us:>12.2f}{f'{rng[k][0]:.2f}-{rng[k][1]:.2f}':>14}{lat}")
print()
# Ratios within each round (the same nginx, seconds apart), then their median: on a shared
# machine the capacity moves between rounds, and a ratio of medians mixes rounds.
def per_round(a, b):
    return [x[1] / y[1] for x, y in zip(rows.get(a, []), rows.get(b, []))]
def fmt(v):
    return f"x{statistics.median(v):.2f} (rounds " + ", ".join(f"{x:.2f}" for x in v) + ")" if v else "-"
for io in sys.argv[2].split():
    o, c = f"webtune-open-{io}", f"webtune-closed-{io}"
    if o in med and c in med:
        print(f"--io {io}: open loop {fmt(per_round(o, c))} of its closed loop (goal <= 1.1), "
              f"{fmt(per_round(o, 'wrk2-open'))} of wrk2's CPU per request (goal <= 0.8); "
              f"p99 {med[o][3]:.3f} ms vs wrk2's {med['wrk2-open'][3]:.3f} ms")
PY

if [ "${PERF:-1}" = 1 ] && command -v perf >/dev/null; then
  # Where the open loop's CPU goes: system calls and context switches per request at the last
  # round's rate (perf's tracepoints; needs root or perf_event_paranoid <= -1).
  echo
  echo "perf stat at $rate req/s, ${OSECS}s (per completed request):"
  perf_per_request wrk2-open "$WRK2" -t1 -c"$CONNS" -d"${OSECS}s" -R"$rate" "$URL"
  for io in $IO; do wt "$io"; perf_per_request "webtune-open-$io" "${wt_cmd[@]}" -d "${OSECS}s" --rate "$rate"; done
  for io in $IO; do wt "$io"; perf_per_request "webtune-closed-$io" "${wt_cmd[@]}" -d "${CSECS}s"; done
fi
