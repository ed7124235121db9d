#!/usr/bin/env bash
# webtune fs vs postmark (and fio's closest job) on the same directory, in the same run:
# transactions/s and the generator's own CPU per transaction (user+sys of the whole process,
# measured from outside by rusage.py, over creation, transactions and deletion alike).
#
#   bench/vs-postmark.sh [ROUNDS] [FILES] [TRANSACTIONS]   defaults: 5 rounds, 1000 50000
#   DIR=/mnt/x bench/vs-postmark.sh                       default DIR: a folder in /dev/shm
#
# Seed 004's "1000/50000" is the default. postmark and `webtune fs -c 1` make the same
# choices (same seed, same generator), so they move the same files and bytes; fio has no
# transactions, so its job moves the same bytes through a pool of the same files (sizes
# 500..10000, 4 KiB blocks as stdio's buffer, about one file per two I/Os, a file opened per
# visit) and its CPU is divided by the same transaction count. postmark's own rate has
# whole-second resolution, so every tool's rate here is transactions / its wall time.
# Runs are interleaved (postmark, webtune, fio, ...) because this machine's noise is large.
# A benchmark, not a test: it asserts nothing.
set -euo pipefail
ROUNDS=${1:-5}
FILES=${2:-1000}
TRANSACTIONS=${3:-50000}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
WEBTUNE=${WEBTUNE:-$top/target/release/webtune}
[ -x "$WEBTUNE" ] || (cd "$top" && cargo build --release -q -p webtune)
for tool in postmark fio python3; do
  command -v $tool >/dev/null || { echo "needs $tool (apt-get install postmark fio python3)"; exit 1; }
done
base=${DIR:-/dev/shm}
work=$(mktemp -d "$base/webtune-vs-postmark.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
mkdir -p "$work/pm" "$work/wt" "$work/fio" "$work/lab"
export WEBTUNE_LAB_DIR="$work/lab"
rows="$work/rows"
: > "$rows"

# measure NAME CMD... : wall time and rusage of CMD; appends "NAME wall user sys".
measure() {
  local name=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  python3 "$here/rusage.py" "$work/ru" -- "$@" > "$work/out.$name" 2>&1 || { cat "$work/out.$name"; exit 1; }
  t1=$(date +%s.%N)
  read -r user sys _rss _code < "$work/ru"
  echo "$name $(python3 -c "print($t1 - $t0)") $user $sys" >> "$rows"
}

printf 'set location %s\nset number %s\nset transactions %s\nrun\nquit\n' \
  "$work/pm" "$FILES" "$TRANSACTIONS" > "$work/pm.cfg"
echo "$(df -T "$work" | awk 'NR==2 {print $2}') in $work; $FILES files, $TRANSACTIONS transactions, $ROUNDS rounds; $(nproc) cores"
for r in $(seq "$ROUNDS"); do
  measure postmark postmark "$work/pm.cfg"
  measure webtune "$WEBTUNE" fs --dir "$work/wt" --files "$FILES" --transactions "$TRANSACTIONS" -q --json "$work/w.json"
  bytes=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print((r["bytes_read"]+r["bytes_written"]+4095)//4096*4096)' "$work/w.json")
  measure fio fio --name=postmark-like --directory="$work/fio" --nrfiles="$FILES" \
    --filesize=500-10000 --bs=4k --rw=rw --rwmixread=50 --file_service_type=random:2 \
    --openfiles=1 --ioengine=psync --io_size="$bytes" --unlink=1 --output-format=terse
done
grep -q "seconds of transactions" "$work/out.postmark" || { echo "postmark did not finish:"; cat "$work/out.postmark"; exit 1; }

python3 - "$rows" "$TRANSACTIONS" <<'PY'
import statistics, sys
rows, t = sys.argv[1], int(sys.argv[2])
by = {}
for line in open(rows):
    name, wall, user, sys_ = line.split()
    by.setdefault(name, []).append((float(wall), float(user), float(sys_)))
def med(name, f):
    return statistics.median(f(*x) for x in by[name])
pm_cpu = med("postmark", lambda w, u, s: (u + s) / t * 1e6)
pm_rate = med("postmark", lambda w, u, s: t / w)
print(f"{'tool':10} {'wall s':>8} {'trans/s':>9} {'user s':>7} {'sys s':>7} {'CPU µs/trans':>13} {'CPU vs pm':>9} {'rate vs pm':>10}")
for name in ["postmark", "webtune", "fio"]:
    wall = med(name, lambda w, u, s: w)
    user = med(name, lambda w, u, s: u)
    sys_ = med(name, lambda w, u, s: s)
    cpu = med(name, lambda w, u, s: (u + s) / t * 1e6)
    rate = med(name, lambda w, u, s: t / w)
    print(f"{name:10} {wall:8.3f} {rate:9.0f} {user:7.3f} {sys_:7.3f} {cpu:13.2f} {cpu/pm_cpu:9.2f} {rate/pm_rate:10.2f}")
print("medians over the rounds; fio: the same bytes as the others, per the same transaction count")
PY
