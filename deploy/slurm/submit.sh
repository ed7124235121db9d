#!/bin/sh
# Submit a sharded webtune test to Slurm, then its merge, to run when every shard has
# succeeded (docs/sharding.md, "Slurm"):
#
#   TARGET_URL=http://target:8080/ BENCH_ARGS='-c 400 --rate 20000 -d 60s -t 2' \
#       deploy/slurm/submit.sh [--array] SHARDS [sbatch options for the shards …]
#
# Default: one job whose single srun step starts the SHARDS shards at once (shards.sbatch).
# --array: one array task per shard (array.sbatch), the common start fixed now, START_LEAD
# seconds ahead (default 60: every task must be running by then). Results, the jobs'
# output and the merge's all.json and all.html go to RESULTS_DIR (default:
# ./webtune-DATE, which every node must see). Prints the two job ids and the directory.
# Environment also: THRESHOLDS and MERGE_ARGS (the merge's), START_LEAD, ENTRYPOINT, WEBTUNE.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
form=step
if [ "${1:-}" = --array ]; then
    form=array
    shift
fi
shards=${1:-}
case $shards in
'' | *[!0-9]* | 0)
    echo "usage: submit.sh [--array] SHARDS [sbatch options …]  (SHARDS: 1 or more)" >&2
    exit 2
    ;;
esac
shift
[ -n "${TARGET_URL:-}" ] || {
    echo "submit.sh: set TARGET_URL (and BENCH_ARGS, the whole test's flags)" >&2
    exit 2
}
ENTRYPOINT=${ENTRYPOINT:-$(cd "$here/.." && pwd)/entrypoint.sh}
RESULTS_DIR=${RESULTS_DIR:-$PWD/webtune-$(date -u +%Y%m%dT%H%M%SZ)}
export ENTRYPOINT RESULTS_DIR
mkdir -p "$RESULTS_DIR"
case $form in
step)
    jid=$(sbatch --parsable --export=ALL --ntasks="$shards" \
        --output="$RESULTS_DIR/slurm-shards-%j.out" "$@" "$here/shards.sbatch")
    ;;
array)
    START_AT=$(date -u -d "+${START_LEAD:-60} seconds" +%Y-%m-%dT%H:%M:%SZ)
    export START_AT
    jid=$(sbatch --parsable --export=ALL --array="0-$((shards - 1))" \
        --output="$RESULTS_DIR/slurm-shard-%a.out" "$@" "$here/array.sbatch")
    ;;
esac
jid=${jid%%;*}
mid=$(sbatch --parsable --export=ALL --dependency="afterok:$jid" --kill-on-invalid-dep=yes \
    --output="$RESULTS_DIR/slurm-merge-%j.out" "$here/merge.sbatch")
echo "webtune: shards: job $jid ($form); merge: job ${mid%%;*} after it; results in $RESULTS_DIR"
