#!/usr/bin/env bash
# Kill-cycle soak of the lab (issue 13, "Scale and soak"): N times, start
# `webtune lab run nginx-apache --set os.somaxconn=1024` (two servers in a private network
# namespace), SIGKILL webtune at a random moment during start, load or stop, run
# `webtune lab clean`, and check that nothing is left: no process naming the lab directory,
# no process in a namespace the run created (or any other namespace than ours naming the lab
# directory), no stack directory and no registry entry. Prints one line per leak and a
# summary line; exits 1 when anything was left, 0 otherwise.
#
#   bench/soak-kill.sh [N]        default 100 cycles; needs root (a network namespace)
#
# A private lab root (WEBTUNE_LAB_DIR) is used and removed at the end. Each cycle's load
# is 1 s of 10 keep-alive connections on the namespace's loopback. SKIP_CLEAN=1 leaves out
# the `lab clean` to show that the checks see what a killed run leaves.
set -uo pipefail
N=${1:-100}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
WEBTUNE=${WEBTUNE:-$top/target/debug/webtune}
[ -x "$WEBTUNE" ] || (cd "$top" && cargo build -q -p webtune) || exit 2
[ "$(id -u)" = 0 ] || { echo "soak-kill: needs root (os.somaxconn needs a network namespace)" >&2; exit 2; }

LAB=$(mktemp -d /tmp/webtune-soak.XXXXXX)
# The servers' workers (www-data) pass through it; webtune keeps a lab root's mode as given.
chmod 711 "$LAB"
export WEBTUNE_LAB_DIR=$LAB
host_ns=$(readlink /proc/self/ns/net)
trap '"$WEBTUNE" lab clean >/dev/null 2>&1; rm -rf "$LAB"' EXIT

now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }

# Processes (not zombies) whose command line or working directory names $LAB, or that are in
# one of the namespaces given as arguments (inodes, "net:[N]").
leftovers() {
  local pid ns cmd
  for d in /proc/[0-9]*; do
    pid=${d#/proc/}
    [ "$pid" = $$ ] && continue
    [ "$(awk '{print $3}' "$d/stat" 2>/dev/null)" = Z ] && continue
    ns=$(readlink "$d/ns/net" 2>/dev/null) || continue
    cmd=$({ tr '\0' ' ' < "$d/cmdline"; } 2>/dev/null)
    case " $* " in *" $ns "*) echo "$pid in $ns: $cmd"; continue ;; esac
    # nginx's workers name no directory; their working directory does.
    case "$cmd $(readlink "$d/cwd" 2>/dev/null)" in *"$LAB"*) ;; *) continue ;; esac
    # Our own commands (this script, the clean) are not leaks.
    case $cmd in *soak-kill*|*" lab clean"*) continue ;; esac
    if [ "$ns" != "$host_ns" ]; then echo "$pid in $ns (not the host's): $cmd"
    else echo "$pid: $cmd"; fi
  done
}

declare -A phases=()
leaks=0 cycles_leaking=0
for ((i = 1; i <= N; i++)); do
  err="$LAB.err"
  start=$(now_ms)
  "$WEBTUNE" lab run nginx-apache --set os.somaxconn=1024 -- -c 10 -d 1s >/dev/null 2>"$err" &
  pid=$!
  # Aim at one of the three phases, then say which one the kill really hit.
  aim=$((RANDOM % 3))
  ready_ms= target=
  [ $aim = 0 ] && target=$((start + RANDOM % 300))
  # Poll for "ready" every 10 ms (at most 5 s) until the chosen moment.
  for _ in $(seq 500); do
    if [ -z "$ready_ms" ] && grep -q ' ready at ' "$err" 2>/dev/null; then
      ready_ms=$(now_ms)
      [ $aim = 1 ] && target=$((ready_ms + RANDOM % 950))
      [ $aim = 2 ] && target=$((ready_ms + 1000 + RANDOM % 200))
    fi
    [ -n "$target" ] && [ "$(now_ms)" -ge "$target" ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.01
  done
  kill_ms=$(now_ms)
  # The namespaces this run created, as the registry names them, before the kill.
  nss=$(cat "$LAB"/registry/*.json 2>/dev/null | grep -o '"netns": *[0-9]*' | sed 's/.*: */net:[/; s/$/]/' | sort -u | tr '\n' ' ')
  kill -KILL $pid 2>/dev/null
  wait $pid 2>/dev/null
  if grep -q 'stopped; no process' "$err"; then phase=finished
  elif ! grep -q ' ready at ' "$err"; then phase=start
  elif [ -n "$ready_ms" ] && [ $((kill_ms - ready_ms)) -lt 1000 ]; then phase=load
  elif [ -n "$ready_ms" ]; then phase=stop
  else phase=load-or-stop  # ready seen only after the kill
  fi
  phases[$phase]=$((${phases[$phase]:-0} + 1))
  if [ -n "${SKIP_CLEAN:-}" ]; then :
  elif ! "$WEBTUNE" lab clean >/dev/null 2>"$LAB.clean"; then
    echo "cycle $i ($phase): lab clean failed: $(head -1 "$LAB.clean")"
  fi
  left=$(leftovers $nss)
  dirs=$(cd "$LAB" && ls -A | grep -vx registry; ls -A registry 2>/dev/null)
  if [ -n "$left$dirs" ]; then
    cycles_leaking=$((cycles_leaking + 1))
    [ -n "$left" ] && { leaks=$((leaks + $(echo "$left" | wc -l))); echo "$left" | sed "s/^/cycle $i ($phase, kill at $((kill_ms - start)) ms): left process /"; }
    [ -n "$dirs" ] && echo "$dirs" | sed "s|^|cycle $i ($phase): left in $LAB: |"
    # Do not let one leak count again in every later cycle.
    echo "$left" | awk '{print $1}' | grep -x '[0-9]*' | xargs -r kill -KILL 2>/dev/null
    (cd "$LAB" && ls -A | grep -vx registry | xargs -r rm -rf; rm -f registry/*)
  fi
  rm -f "$err" "$LAB.clean"
done
summary=""
for p in start load stop load-or-stop finished; do
  [ -n "${phases[$p]:-}" ] && summary+="$p ${phases[$p]}, "
done
echo "soak-kill: $N cycles (killed during ${summary%, }): $cycles_leaking cycle(s) left something ($leaks process(es))"
[ "$cycles_leaking" = 0 ]
