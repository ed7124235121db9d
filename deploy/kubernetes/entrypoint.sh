#!/bin/sh
# webtune shard entrypoint: runs one shard of a sharded test, as a Kubernetes Indexed Job
# (or a Slurm array, or pdsh) starts it, or merges the shards' results.
#
#   entrypoint.sh shard   one shard: JOB_COMPLETION_INDEX (0-based, set by Kubernetes for an
#                         Indexed Job; SLURM_ARRAY_TASK_ID or SHARD_INDEX work too) becomes
#                         --shard INDEX+1/SHARDS; every shard waits for START_AT.
#   entrypoint.sh merge   merge RESULTS_DIR/shard-*.json into RESULTS_DIR/all.json and
#                         all.html; exit 99 when a THRESHOLDS expression fails.
#
# Environment:
#   TARGET_URL   the URL to load (shard)
#   SHARDS       how many shards in all (shard)
#   START_AT     common start: RFC 3339, Unix ms or +DURATION (shard; default +10s, which only
#                lines up shards started within the same second)
#   BENCH_ARGS   the whole test's flags, the same for every shard, e.g. "-c 3000 --rate 60000 -d 60s"
#   THRESHOLDS   ';'-separated threshold expressions, checked on the merged result (merge)
#   RESULTS_DIR  where results go (default /results)
#   WEBTUNE      the webtune binary (default: webtune on PATH)
set -eu

mode=${1:-shard}
results=${RESULTS_DIR:-/results}
webtune=${WEBTUNE:-webtune}

case "$mode" in
shard)
    index=${JOB_COMPLETION_INDEX:-${SLURM_ARRAY_TASK_ID:-${SHARD_INDEX:-}}}
    if [ -z "$index" ] || [ -z "${SHARDS:-}" ] || [ -z "${TARGET_URL:-}" ]; then
        echo "entrypoint.sh: set JOB_COMPLETION_INDEX (or SHARD_INDEX), SHARDS and TARGET_URL" >&2
        exit 2
    fi
    shard=$((index + 1))
    mkdir -p "$results"
    # BENCH_ARGS is split into words on purpose: it holds several flags.
    # shellcheck disable=SC2086
    exec "$webtune" bench "$TARGET_URL" ${BENCH_ARGS:-} \
        --shard "$shard/$SHARDS" --start-at "${START_AT:-+10s}" \
        --quiet --json "$results/shard-$shard.json"
    ;;
merge)
    set --
    if [ -n "${THRESHOLDS:-}" ]; then
        old_ifs=$IFS
        IFS=';'
        for t in $THRESHOLDS; do
            set -- "$@" --threshold "$t"
        done
        IFS=$old_ifs
    fi
    exec "$webtune" merge "$results"/shard-*.json \
        --json "$results/all.json" --html "$results/all.html" "$@"
    ;;
*)
    echo "entrypoint.sh: unknown mode $mode (use shard or merge)" >&2
    exit 2
    ;;
esac
