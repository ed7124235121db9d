#!/usr/bin/env bash
# webtune smtp vs postal and smtp-source against the same smtp-sink, in the same run:
# messages/s and the generator's own CPU per message (user+sys of the generator process and
# its children / messages the sink received during the run).
#
#   bench/vs-postal.sh [ROUNDS] [SECONDS]     defaults: 3 rounds, 5 s per run
#   SESSIONS=10 SIZE_KB=5 bench/vs-postal.sh
#
# One smtp-sink (Postfix 3.7, a private loopback port) counts every message (its -c
# counter); each generator runs SESSIONS parallel sessions for SECONDS (postal and
# smtp-source are stopped with SIGKILL at the end, as they run until killed or until their
# count), messages of SIZE_KB KiB (postal -M/-m; smtp-source -l; webtune --size, which
# includes the ~250 bytes of headers), 1 recipient. Two modes: one message per session
# (connect, EHLO, message, QUIT) and many messages per session (smtp-source -d, postal
# -c 1000 (1..1000 a session: postal 0.76's -c -1 sends none), webtune --per-connection
# 1000000). Runs are interleaved because this machine's
# noise is large. Prints medians and webtune's ratios to the best peer. A benchmark, not a
# test: it asserts nothing.
set -euo pipefail
ROUNDS=${1:-3}
SECS=${2:-5}
SESSIONS=${SESSIONS:-10}
SIZE_KB=${SIZE_KB:-5}
THREADS=${THREADS:-1}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
WEBTUNE=${WEBTUNE:-$top/target/release/webtune}
[ -x "$WEBTUNE" ] || (cd "$top" && cargo build --release -q -p webtune)
SINK=$(command -v smtp-sink || echo /usr/sbin/smtp-sink)
SOURCE=$(command -v smtp-source || echo /usr/sbin/smtp-source)
POSTAL=$(command -v postal || echo /usr/sbin/postal)
for p in "$SINK" "$SOURCE" "$POSTAL"; do
  [ -x "$p" ] || { echo "needs $p (apt-get install postfix postal)"; exit 1; }
done
client_pin=(); server_pin=()
[ -n "${SERVER_CPUS:-}" ] && server_pin=(taskset -c "$SERVER_CPUS")
[ -n "${CLIENT_CPUS:-}" ] && client_pin=(taskset -c "$CLIENT_CPUS")

work=$(mktemp -d /tmp/webtune-vs-postal.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
for n in $(seq 1000); do echo "user$n@example.com"; done > "$work/users"
as_user=(); [ "$(id -u)" -eq 0 ] && as_user=(-u nobody)
"${server_pin[@]}" "$SINK" "${as_user[@]}" -c "127.0.0.1:$port" 1024 > "$work/sink.out" 2>/dev/null &
sink=$!
trap 'kill $sink 2>/dev/null || true; wait $sink 2>/dev/null || true; rm -rf "$work"' EXIT INT TERM
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
ulimit -n 20000 2>/dev/null || true

sink_count() { sleep 0.3; tr '\r' '\n' < "$work/sink.out" | awk -F'mesg=' 'NF>1 {n=$2} END {print n+0}'; }

# measure NAME CMD... : runs CMD under rusage.py (killed after SECS when it does not end
# itself), counts the sink's messages, appends a row.
rows="$work/rows"
measure() {
  local name=$1; shift
  local before after t0 t1
  before=$(sink_count)
  t0=$(date +%s.%N)
  # In $work: postal writes a postal.log of every message into its working directory.
  (cd "$work" && python3 "$here/rusage.py" "$work/ru" -- "${client_pin[@]}" "$@" > "$work/out" 2>&1) || true
  t1=$(date +%s.%N)
  after=$(sink_count)
  read -r user sys rss code < "$work/ru"
  local secs
  case $name in
    webtune*) secs=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["duration_s"])' "$work/w.json") ;;
    *) secs=$(python3 -c "print($t1 - $t0 - 0.3)") ;;
  esac
  echo "$name $((after - before)) $secs $user $sys $rss" >> "$rows"
}

# A peer that runs until killed: stop it after SECS. SIGTERM, not SIGKILL: timeout must
# live to reap it, or its CPU never reaches rusage.py.
for_secs=(timeout -s TERM -k 2 "$SECS")

SIZE=$((SIZE_KB * 1024))
server="[127.0.0.1]$port"
echo "smtp-sink on 127.0.0.1:$port; $ROUNDS rounds x ${SECS}s; $SESSIONS sessions; ${SIZE_KB} KiB messages; webtune -t $THREADS; $(nproc) cores"
for r in $(seq "$ROUNDS"); do
  # One message per session.
  measure postal-1 "${for_secs[@]}" "$POSTAL" -t "$SESSIONS" -c 1 -M "$SIZE_KB" -m "$SIZE_KB" "$server" "$work/users"
  measure smtp-source-1 "${for_secs[@]}" "$SOURCE" -s "$SESSIONS" -m 100000000 -l "$SIZE" -t user1@example.com "127.0.0.1:$port"
  measure webtune-1 "$WEBTUNE" smtp "127.0.0.1:$port" -c "$SESSIONS" -t "$THREADS" -d "${SECS}s" --size "$SIZE" --users "$work/users" -q --json "$work/w.json"
  # Many messages per session.
  measure postal-many "${for_secs[@]}" "$POSTAL" -t "$SESSIONS" -c 1000 -M "$SIZE_KB" -m "$SIZE_KB" "$server" "$work/users"
  measure smtp-source-many "${for_secs[@]}" "$SOURCE" -d -s "$SESSIONS" -m 100000000 -l "$SIZE" -t user1@example.com "127.0.0.1:$port"
  measure webtune-many "$WEBTUNE" smtp "127.0.0.1:$port" -c "$SESSIONS" -t "$THREADS" -d "${SECS}s" --size "$SIZE" --per-connection 1000000 --users "$work/users" -q --json "$work/w.json"
  echo "  round $r done"
done

python3 - "$rows" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, msgs, secs, user, sys_, rss = line.split()
    msgs, secs, cpu = int(msgs), float(secs), float(user) + float(sys_)
    rows.setdefault(name, []).append((msgs / secs, 1e6 * cpu / max(msgs, 1)))
med = {k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v),
           min(r[0] for r in v), max(r[0] for r in v)) for k, v in rows.items()}
print(f"\n{'generator':<18}{'msg/s (median)':>16}{'min-max':>18}{'CPU us/msg':>12}")
for k, (rate, us, lo, hi) in med.items():
    print(f"{k:<18}{rate:>16.0f}{f'{lo:.0f}-{hi:.0f}':>18}{us:>12.1f}")
print()
for mode in ("1", "many"):
    peers = [k for k in med if k.endswith("-" + mode) and not k.startswith("webtune")]
    ours = "webtune-" + mode
    if ours not in med or not peers:
        continue
    best_rate = max(peers, key=lambda k: med[k][0])
    best_cpu = min(peers, key=lambda k: med[k][1])
    print(f"{ours}: msg/s x{med[ours][0] / med[best_rate][0]:.2f} of {best_rate}, "
          f"CPU per message x{med[ours][1] / med[best_cpu][1]:.2f} of {best_cpu} "
          f"(goal: msg/s >= x1.00, CPU <= x0.80)")
PY
