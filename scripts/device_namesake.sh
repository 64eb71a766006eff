#!/bin/bash
# The namesake at S2V's width on one GPU machine, in one call of at most ~560 s: Quick-Thoughts
# (configs/qt_s2v.yaml) with uniform, hard1-clamp and hard2-clamp negatives, 2 seeds each, the cells side
# by side on the one GPU, to about 2.5 epochs (the peak region of the learning curve in
# results/s2v_curve_gpu/); every part under its own deadline, its results copied to $OUT as soon as it ends:
#
#   0. unpack gpu_carry_s2v/ (scripts/device_s2v_prepare.sh: the books, SentEval's six tasks and STS12-16,
#      the Wiki-1000 folder) into $WORK/data; at once, in the background, the config's books split and
#      tokenized into the table's shared cache (qt-hard grid run s2v-curve --prepare-only).
#   a. side by side (PROBE_S, default 120 s): scripts/bench_train.py cells --device cuda --cells 1,3,6:
#      aggregate sentences/s of N cells sharing the GPU -> $OUT/side_by_side_gpu.jsonl. From its rates,
#      the seeds that fit: 2 seeds (6 cells) when 6 cells of STEPS steps fit TRAIN_S at the 6-cell rate,
#      else 1 seed (3 cells); when even that does not fit, the steps are cut to what 3 cells train in
#      TRAIN_S (the summary says so). STEPS: EPOCHS (default 2.5) epochs of the prepared corpus.
#   b. the table (until DEADLINE - SCORE_RESERVE_S): qt-hard grid run qt-table --workers <cells> --device cuda
#      --protocol senteval,namesake, each cell trained in TF32 and read out on the six tasks (SentEval
#      protocol, solver on the GPU), STS12-16 and the held-out next-sentence top-1 and loss on the books
#      the config leaves out (8-10), into its ledger results.jsonl.
#   c. the tables of what finished (SCORE_RESERVE_S, default 40 s): the same command with --summary-only
#      -> $OUT/results.jsonl, table.md, namesake_table.md (each row's difference to uniform paired by
#      seed, 95% t-intervals), runs/<row>_s<seed>/ (each run's config and logged rows, not its weights).
#
# Run from the repository root, with $OUT an empty folder:
#
#   bash scripts/device_namesake.sh                 # env: PY (python3), DEADLINE (560 s), DRY=1
#
# Needs what scripts/device_s2v.sh needs; $WORK, the commit recorded, logs/, summary.txt and the exit
# status are scripts/_device.sh's.
#
# DRY=1: the same steps at toy size on a machine without a GPU, reading $QT_HARD_DATA when there is no
# carry (a 16-unit GRU pair on 3 books, book 2 held out, batch 32; uniform and hard2-clamp; a probe of
# 1 and 2 cells, 6 steps a cell, 2 folds; a deadline of 840 s, since a busy small CPU is slow).
set -u
DEADLINE=${DEADLINE:-560}
PROBE_S=${PROBE_S:-120}
TRAIN_S=${TRAIN_S:-330}
SCORE_RESERVE_S=${SCORE_RESERVE_S:-40}
EVAL_S=${EVAL_S:-35}   # a cell's readouts after its training (six tasks, STS12-16, held-out books on the GPU)
EPOCHS=${EPOCHS:-2.5}
ROWS=${ROWS:-uniform,hard1-clamp,hard2-clamp}
CARRY=${CARRY:-gpu_carry_s2v}
source "${BASH_SOURCE%/*}/_device.sh"  # the helpers the device scripts share (listed at its top)
TABLE=$WORK/table
run_folders "$TABLE"

DEVICE=cuda
SET=(train.tf32=true train.num_threads=2 train.checkpoint_every=1000)
PROBE=(--cells 1,3,6 --steps 40 --warmup 10)
CELLS_ONE=3          # cells of one seed (the three rows)
EXTRA=()
if [ "$DRY" = 1 ]; then
    DEADLINE=${DRY_DEADLINE:-840}
    DEVICE=cpu
    SET=(model.embed_dim=16 model.hidden_dim=16 data.max_books=3 'data.exclude_books=[2]' train.batch_size=32
        data.max_vocab=5000 train.num_threads=1 train.checkpoint_every=0)
    PROBE=(--dry --cells 1,2 --steps 12 --warmup 3)
    PROBE_S=${DRY_PROBE_S:-300}
    EXTRA=(--kfold 2)
    ROWS=uniform,hard2-clamp
    CELLS_ONE=2
    TRAIN_S=${DRY_TRAIN_S:-60}
    EPOCHS=0.05
    export OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
fi
SETARGS=()
for s in "${SET[@]}"; do SETARGS+=(--set "$s"); done

banner device_namesake

# ---------------------------------------------------------------- 0. data
unpack_books_carry || :  # DRY=1 without the carry: the data root
# The table's shared cache (OUT/cache of the qt-table grid), split and tokenized while the probe runs.
"$PY" -m qt_hard.cli grid run s2v-curve --out "$TABLE" --config configs/qt_s2v.yaml --set "${SET[@]}" --prepare-only \
    >"$LOGS/prepare.log" 2>&1 &
PREP=$!
[ "$DRY" = 1 ] && wait "$PREP"  # one at a time on a small CPU

# ---------------------------------------------------------------- a. side by side
timeout -k 5 "$(within "$PROBE_S")" "$PY" scripts/bench_train.py cells --device "$DEVICE" "${PROBE[@]}" \
    --out "$WORK/probe" --output "$OUT/side_by_side_gpu.jsonl" >"$LOGS/probe.log" 2>&1 || FAILED+=" probe"
PROBED=$(grep '^side by side on' "$LOGS/probe.log" | tail -1)
echo "probe at $(elapsed)s: ${PROBED:-no headline (the rates of the rounds that ended are in side_by_side_gpu.jsonl)}"
wait "$PREP" || FAILED+=" prepare"
BATCHES=$(sed -n 's/.* \([0-9]*\) batches an epoch.*/\1/p' "$LOGS/prepare.log" | tail -1)
echo "prepare at $(elapsed)s: $(grep '^prepared' "$LOGS/prepare.log" | tail -1)"
# Seeds and steps from the probe's aggregate rates (sentences/s at N cells) and the time left.
read -r SEEDS STEPS NOTE < <("$PY" - "$OUT/side_by_side_gpu.jsonl" "${BATCHES:-0}" "$EPOCHS" "$TRAIN_S" "$(left)" \
    "$SCORE_RESERVE_S" "$EVAL_S" "$CELLS_ONE" <<'EOF'
import json, sys
path, batches, epochs, train_s, left, reserve, eval_s, one = sys.argv[1:]
rates, batch = {}, 400
try:
    for line in open(path):
        r = json.loads(line)
        if "aggregate_sentences_per_s" in r:
            rates[r["cells"]] = r["aggregate_sentences_per_s"]
            batch = r["batch_size"]
except OSError:
    pass
one = int(one)
budget = min(float(train_s), float(left) - float(reserve) - float(eval_s))
steps = max(3, int(float(epochs) * int(batches))) if int(batches) else 300
def rate(n):  # the probe's rate at n cells, else the nearest measured below it
    below = [k for k in rates if k <= n]
    return rates[max(below)] if below else None
for seeds in (2, 1):
    r = rate(seeds * one)
    if r and seeds * one * steps * batch / r <= budget:
        print(seeds, steps, f"{seeds}_seeds_fit_{epochs}_epochs")
        break
else:
    r = rate(one)
    cut = max(3, int(budget * r / (one * batch))) if r else 3
    print(1, min(steps, cut), f"1_seed,_steps_cut_to_fit_{int(budget)}s")
EOF
)
SEED_LIST=0
[ "${SEEDS:-1}" -ge 2 ] && SEED_LIST=0,1
WORKERS=$((${SEEDS:-1} * CELLS_ONE))
echo "table: rows $ROWS, seeds $SEED_LIST, $WORKERS cells side by side, $STEPS steps each ($NOTE), $(left)s left"

# ---------------------------------------------------------------- b. the table
GRID=("$PY" -m qt_hard.cli grid run qt-table --out "$TABLE" --config configs/qt_s2v.yaml --rows "$ROWS"
    --seeds "$SEED_LIST" --protocol senteval,namesake --eval-device "$DEVICE" "${SETARGS[@]}" --set "train.steps=$STEPS"
    "${EXTRA[@]+"${EXTRA[@]}"}")
timeout -k 10 "$(($(left) - SCORE_RESERVE_S))" "${GRID[@]}" --workers "$WORKERS" --device "$DEVICE" >"$LOGS/table.log" 2>&1
rc=$?
echo "table exit $rc at $(elapsed)s"
[ "$rc" = 0 ] || FAILED+=" table"

# ---------------------------------------------------------------- c. the tables of what finished
timeout -k 5 "$(left)" "${GRID[@]}" --summary-only >"$LOGS/namesake_table.log" 2>&1 || FAILED+=" namesake_table"
cp "$TABLE/results.jsonl" "$TABLE/table.md" "$TABLE/namesake_table.md" "$OUT/" 2>/dev/null
(cd "$TABLE" && cp --parents runs/*/config.yaml runs/*/metrics.csv "$OUT/") 2>/dev/null

# ---------------------------------------------------------------- summary
{
    summary_head device_namesake
    echo "-- side by side: ${PROBED:-none}"
    echo "-- table: rows $ROWS, seeds $SEED_LIST, $WORKERS cells, $STEPS steps ($NOTE)"
    cat "$OUT/namesake_table.md" 2>/dev/null
    grep -h 'six-task mean difference to' "$LOGS/namesake_table.log" | tail -1
} >"$OUT/summary.txt"
finish
