#!/usr/bin/env bash
# webtune tune against Optuna on a real lab stack: the same stack, the same space, the same
# load and the same number of measured runs; then both winners proven against the default
# in interleaved rounds (default, webtune's, Optuna's; the order reversed every other round,
# so a drift of the machine hits every arm alike) and judged as the tuner's proof judges
# (paired log ratio, Student-t 95% interval, pairs won; bench/tune_vs_optuna.py prove).
#
#   bench/tune-vs-optuna.sh [TRIALS] [DURATION] [ROUNDS]     defaults: 12 3s 5
#   FORUM=1 bench/tune-vs-optuna.sh …     then seed 003's forum (nginx-php-fpm) at -c 1024 too
#   (ONLY_FORUM=1 FORUM=1: the forum alone)
#
# Seed 000: nginx → Apache prefork (the lab's nginx-apache), -c 20, /cpu/20000, the stack's
# default space on this machine (`webtune lab params nginx-apache` marks it). webtune runs
# with its defaults (A/A pair, the advisor's seed, rules of thumb, space-filling, GP; no
# proof of its own: the rounds here are the proof); Optuna 5.0 runs TPESampler(seed=0) with
# its default settings, each trial a `webtune lab run --json`. Optuna installs into a venv
# in this script's temporary directory (`pip install optuna==5.0.0`). A benchmark, not a
# test: it asserts nothing. WEBTUNE=path/to/webtune picks the binary (default: release).
set -euo pipefail
TRIALS=${1:-12}
DURATION=${2:-3s}
ROUNDS=${3:-5}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
WEBTUNE=${WEBTUNE:-$top/target/release/webtune}
[ -x "$WEBTUNE" ] || (cd "$top" && cargo build --release -q -p webtune)
work=$(mktemp -d /tmp/webtune-vs-optuna.XXXXXX)
chmod 755 "$work"  # the servers' workers (www-data under root) pass through to the lab
trap 'WEBTUNE_LAB_DIR="$work/lab" "$WEBTUNE" lab clean >/dev/null 2>&1 || true; rm -rf "$work"' EXIT INT TERM
export WEBTUNE_LAB_DIR="$work/lab"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q optuna==5.0.0

# compare NAME STACK SPACE_TEXTS -- BENCH…: one tune, one Optuna study, the rounds.
compare() {
  local name=$1 stack=$2; shift 2
  local space=() bench=()
  while [ "$1" != "--" ]; do space+=("$1"); shift; done
  shift; bench=("$@")
  local params=() sets_w=() sets_o=()
  for p in "${space[@]}"; do params+=(--param "$p"); done
  echo "== $name: $stack, ${#space[@]} parameters, $TRIALS runs of -d $DURATION each, ${bench[*]}"
  local t0=$SECONDS
  "$WEBTUNE" tune "$stack" ${LAB_ARGS:-} "${params[@]}" --trials "$TRIALS" --confirm 0 \
    --journal "$work/$name.db" --json "$work/$name-webtune.json" -q -- -d "$DURATION" "${bench[@]}" \
    > "$work/$name-webtune.txt" || true
  local wt_s=$((SECONDS - t0))
  sed -n '1,/^best/p' "$work/$name-webtune.txt"
  t0=$SECONDS
  "$work/venv/bin/python" "$here/tune_vs_optuna.py" search "$WEBTUNE" "$stack" "$TRIALS" 0 \
    "$work/$name-optuna.json" "${space[@]}" -- -d "$DURATION" "${bench[@]}"
  local op_s=$((SECONDS - t0))
  mapfile -t sets_w < <(python3 "$here/tune_vs_optuna.py" sets "$work/$name-webtune.json" best)
  mapfile -t sets_o < <(python3 "$here/tune_vs_optuna.py" sets "$work/$name-optuna.json" best)
  echo "webtune's winner (${wt_s}s): ${sets_w[*]}"
  echo "Optuna's winner  (${op_s}s): ${sets_o[*]}  ($(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["best_value"],1))' "$work/$name-optuna.json") ok/s in its search)"
  : > "$work/$name-rounds.tsv"
  run_arm() {  # run_arm ROUND ARM SETS…
    local r=$1 arm=$2; shift 2
    local f="$work/$name-r$r-$arm.json"
    "$WEBTUNE" lab run "$stack" ${LAB_ARGS:-} "$@" -- -q --json "$f" -d "$DURATION" "${bench[@]}" >/dev/null 2>>"$work/lab.log" \
      || { echo "lab run failed:"; tail -3 "$work/lab.log"; exit 1; }
    echo "$r $arm $f" >> "$work/$name-rounds.tsv"
  }
  for r in $(seq "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then
      run_arm "$r" default; run_arm "$r" webtune "${sets_w[@]}"; run_arm "$r" optuna "${sets_o[@]}"
    else
      run_arm "$r" optuna "${sets_o[@]}"; run_arm "$r" webtune "${sets_w[@]}"; run_arm "$r" default
    fi
  done
  echo "proof ($ROUNDS interleaved rounds, -d $DURATION each):"
  python3 "$here/tune_vs_optuna.py" prove "$work/$name-rounds.tsv" | sed 's/^/  /'
}

# The stack's default space on this 2-core machine (lab::tuning::default_space; `webtune lab
# params nginx-apache` marks it): both sides search exactly these.
seed000=(backend.MaxRequestWorkers=1..128:log backend.KeepAlive=on,off backend.KeepAliveTimeout=1..15
         backend.ListenBacklog=64..4096:log frontend.worker_processes=1..4
         frontend.worker_connections=256..8192:log frontend.listen_backlog=64..4096:log
         frontend.upstream_keepalive=0..64)
[ -n "${ONLY_FORUM:-}" ] || compare seed000 nginx-apache "${seed000[@]}" -- -c 20 /cpu/20000
if [ -n "${FORUM:-}" ]; then
  # Seed 003: the forum on nginx → php-fpm with its MariaDB, at 1024 connections; the
  # stack's default space with --app forum (lab::tuning::default_space).
  seed003=(pm.max_children=1..64:log pm=static,dynamic worker_processes=1..4
           worker_connections=256..8192:log listen_backlog=64..4096:log upstream_keepalive=0..64
           db.max_connections=50..2000:log db.back_log=50..4096:log)
  export LAB_ARGS="--app forum"
  compare seed003 nginx-php-fpm "${seed003[@]}" -- -c 1024
fi
