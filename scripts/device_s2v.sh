#!/bin/bash
# Quick-Thoughts at S2V's width on one GPU machine (configs/qt_s2v.yaml), in one call of at most
# ~560 s; every part under its own deadline, its results copied to $OUT as soon as it ends:
#
#   0. unpack gpu_carry_s2v/ (scripts/device_s2v_prepare.sh: the books, SentEval's six tasks, the
#      Wiki-1000 folder) into $WORK/data; at once, in the background on CPUs of its own (PREP_CPUS),
#      the config's books split and tokenized into the curve's run folder (qt-hard grid run s2v-curve
#      --prepare-only).
#   a. speed (SPEED_S, default 75 s): scripts/bench_train.py loop --cases bow_wiki1000 s2v_gru on CUDA,
#      the library's loop against a bare step (BENCH_ROUNDS rounds of BENCH_STEPS steps) ->
#      $OUT/bench_train_speed_gpu.jsonl; then (PRECISION_S, default 120 s) qt-hard grid run s2v-precision:
#      the config's sentences/s in float32, TF32 and bf16, 200 steps each from one seed, and whether each
#      one's mean loss over those steps lies within 1% of float32's -> $OUT/precision.jsonl,
#      precision_choice.json (the fastest that passed, and the steps its rate fits into the budget of b.).
#   b. the learning curve (until DEADLINE): qt-hard grid run s2v-curve, uniform Quick-Thoughts with the config
#      in the chosen precision, trained to that many steps in 3 segments; after each, the six tasks
#      (SentEval protocol, solver on the GPU) and the held-out next-sentence accuracy on books 8-10,
#      which the config leaves out -> $OUT/curve.csv (a row per point, the two control means of
#      results/s2v_controls.json as columns; written from the run's ledger curve.jsonl, also when the
#      command was stopped), curve.png. TRAIN_S (default 360 s) is cut to what the deadline leaves after
#      EVAL_RESERVE_S (default 120 s) for the three evaluations.
#
# Run from the repository root, with $OUT an empty folder:
#
#   bash scripts/device_s2v.sh                        # env: PY (python3), DEADLINE (560 s), DRY=1
#
# Needs no package beyond torch, accelerate, datasets, tokenizers, numpy, scipy, matplotlib, pyyaml
# (PYTHONPATH is the checkout). $WORK (data, run folders, checkpoints), the commit recorded, logs/,
# summary.txt and the exit status (1 when a part failed or wrote nothing) are scripts/_device.sh's.
#
# DRY=1: the same steps at toy size on a machine without a GPU, reading $QT_HARD_DATA when there is
# no carry (a 16-unit GRU pair on 3 books, book 2 held out, a Wiki folder of 30 articles, a few steps,
# CR alone with 2 folds; the controls computed at that size so that the tokenizer check runs).
set -u
DEADLINE=${DEADLINE:-560}
SPEED_S=${SPEED_S:-75}
PRECISION_S=${PRECISION_S:-120}
TRAIN_S=${TRAIN_S:-360}
MAX_STEPS=${MAX_STEPS:-}
EVAL_RESERVE_S=${EVAL_RESERVE_S:-120}
BENCH_STEPS=${BENCH_STEPS:-30}
BENCH_ROUNDS=${BENCH_ROUNDS:-2}
CARRY=${CARRY:-gpu_carry_s2v}
PREP_CPUS=${PREP_CPUS:-8-15}
source "${BASH_SOURCE%/*}/_device.sh"  # the helpers the device scripts share (listed at its top)
RUN=$WORK/s2v
run_folders "$RUN"

CFG=(--config configs/qt_s2v.yaml)
SET=()
EVAL_DEVICE=cuda
CURVE_ARGS=()
PREC_ARGS=(--steps 200 --warmup 10)
BENCH_ARGS=(--steps "$BENCH_STEPS" --rounds "$BENCH_ROUNDS" --warmup 5 --threads 1)
CONTROLS=results/s2v_controls.json
TASKS=MR,CR,SUBJ,MPQA,TREC,MRPC
if [ "$DRY" = 1 ]; then
    SET=(model.embed_dim=16 model.hidden_dim=16 data.max_books=3 'data.exclude_books=[2]' train.batch_size=32
        data.max_vocab=5000 train.num_threads=1)
    EVAL_DEVICE=cpu
    TASKS=CR
    CURVE_ARGS=(--kfold 2)
    PREC_ARGS=(--steps 12 --warmup 2 --allow-cpu --rows fp32,bf16)
    BENCH_ARGS=(--steps 8 --rounds 2 --warmup 2 --threads 1
        --case-set bow_wiki1000:data.classes=20 --case-set bow_wiki1000:train.batch_size=64
        --case-set s2v_gru:model.embed_dim=16 --case-set s2v_gru:model.hidden_dim=16
        --case-set s2v_gru:data.max_books=1 --case-set s2v_gru:data.exclude_books=null
        --case-set s2v_gru:train.batch_size=32)
    MAX_STEPS=6
    EVAL_RESERVE_S=10
    export OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
fi

banner device_s2v

# ---------------------------------------------------------------- 0. data
if unpack_books_carry; then
    WIKI=$WORK/data/wiki_1000_200
else # DRY=1 on the data root: a small Wiki folder from its Wikipedia file
    WIKI=$WORK/data/wiki_dry
    "$PY" -m qt_hard.cli data wiki --articles 30 --sentences 200 --out "$WIKI" --no-progress >/dev/null
fi
echo "data at $QT_HARD_DATA ($(ls "$QT_HARD_DATA/books" | wc -l) book files), Wiki folder $WIKI; $(elapsed)s"

# The curve's books, split and tokenized while the speed part runs, on CPUs the speed part does not use.
PIN=()
if [ "$DRY" != 1 ] && command -v taskset >/dev/null && [ "$(nproc)" -ge 16 ]; then PIN=(taskset -c "$PREP_CPUS"); fi
"${PIN[@]+"${PIN[@]}"}" "$PY" -m qt_hard.cli grid run s2v-curve --out "$RUN" "${CFG[@]}" --set "${SET[@]+"${SET[@]}"}" \
    --prepare-only >"$LOGS/prepare.log" 2>&1 &
PREP=$!
[ "$DRY" = 1 ] && wait "$PREP"  # one at a time on a small CPU

# ---------------------------------------------------------------- a. speed
BENCH_PIN=()
[ ${#PIN[@]} -gt 0 ] && BENCH_PIN=(taskset -c 0-7)
timeout -k 5 "$(within "$SPEED_S")" "${BENCH_PIN[@]+"${BENCH_PIN[@]}"}" "$PY" scripts/bench_train.py loop --cases bow_wiki1000 s2v_gru \
    --wiki "$WIKI" --out "$WORK/bench" "${BENCH_ARGS[@]}" >"$OUT/bench_train_speed_gpu.jsonl" 2>"$LOGS/bench.log"
rc=$?
echo "speed bench exit $rc at $(elapsed)s: $(tail -1 "$OUT/bench_train_speed_gpu.jsonl")"
[ "$rc" = 0 ] || FAILED+=" speed"
wait "$PREP"
rc=$?
echo "prepare exit $rc at $(elapsed)s: $(grep '^prepared' "$LOGS/prepare.log" | tail -1)"
[ "$rc" = 0 ] || FAILED+=" prepare"
timeout -k 5 "$(within "$PRECISION_S")" "$PY" -m qt_hard.cli grid run s2v-precision --out "$RUN" "${CFG[@]}" \
    --set "${SET[@]+"${SET[@]}"}" "${PREC_ARGS[@]}" --budget-s "$TRAIN_S" >"$LOGS/precision.log" 2>&1
rc=$?
echo "precision exit $rc at $(elapsed)s: $(tail -1 "$LOGS/precision.log")"
[ "$rc" = 0 ] && [ -f "$RUN/precision_choice.json" ] || FAILED+=" precision"  # none within the tolerance: none chosen
cp "$RUN/precision.jsonl" "$RUN/precision_choice.json" "$OUT/" 2>/dev/null

# ---------------------------------------------------------------- b. the learning curve
if [ "$DRY" = 1 ]; then # the controls at toy size, so that the curve's tokenizer check runs
    CONTROLS=$WORK/controls/s2v_controls.json
    "$PY" -m qt_hard.cli grid run s2v-controls --out "$WORK/controls" "${CFG[@]}" --set "${SET[@]+"${SET[@]}"}" \
        --rows untrained --tasks "$TASKS" --kfold 2 >"$LOGS/controls.log" 2>&1 || FAILED+=" controls"
fi
# Training seconds: TRAIN_S, or what the deadline leaves after the evaluations' reserve; the steps the
# chosen precision's rate fits into them (its choice written again for that budget: --summary-only).
budget=$(($(left) - EVAL_RESERVE_S))
[ "$budget" -gt "$TRAIN_S" ] && budget=$TRAIN_S
[ "$budget" -lt 1 ] && budget=1
PRECISION=fp32 RATE="" STEPS=300
if [ -f "$RUN/precision_choice.json" ]; then
    "$PY" -m qt_hard.cli grid run s2v-precision --out "$RUN" --budget-s "$budget" --summary-only >/dev/null 2>&1
    read -r PRECISION RATE STEPS < <("$PY" -c 'import json,sys; c=json.load(open(sys.argv[1])); print(c["precision"], c["sentences_per_s"], c["steps"])' "$RUN/precision_choice.json")
else
    echo "!! no precision choice: float32 (the rate is unknown), 3 points of 100 steps"
fi
[ -n "$MAX_STEPS" ] && [ "$STEPS" -gt "$MAX_STEPS" ] && STEPS=$((MAX_STEPS - MAX_STEPS % 3))
echo "curve: $PRECISION at ${RATE:-?} sentences/s, $STEPS steps (training budget ${budget}s${MAX_STEPS:+, at most $MAX_STEPS steps}), $(left)s left"
timeout -k 10 "$(left)" "$PY" -m qt_hard.cli grid run s2v-curve --out "$RUN" "${CFG[@]}" --set "${SET[@]+"${SET[@]}"}" \
    --steps "$STEPS" --points 3 --precision "$PRECISION" --eval-device "$EVAL_DEVICE" --tasks "$TASKS" \
    --controls "$CONTROLS" --deadline-s "$(($(left) - 5))" "${CURVE_ARGS[@]+"${CURVE_ARGS[@]}"}" >"$LOGS/curve.log" 2>&1
rc=$?
echo "curve exit $rc at $(elapsed)s"
# A stopped command wrote no tables: curve.csv and curve.png from the points its ledger holds.
[ "$rc" = 0 ] || "$PY" -m qt_hard.cli grid run s2v-curve --out "$RUN" --summary-only >>"$LOGS/curve.log" 2>&1
[ "$rc" = 0 ] && [ "$(wc -l <"$RUN/curve.csv" 2>/dev/null || echo 0)" -gt 1 ] || FAILED+=" curve"
cp "$RUN/curve.csv" "$RUN/curve.png" "$RUN/metrics.csv" "$RUN/precision_choice.json" "$OUT/" 2>/dev/null
cp "$RUN/config.yaml" "$OUT/curve_config.yaml" 2>/dev/null

# ---------------------------------------------------------------- summary
{
    summary_head device_s2v
    echo "-- speed (loop/bare):"
    tail -1 "$OUT/bench_train_speed_gpu.jsonl" 2>/dev/null
    echo "-- precision:"
    tail -1 "$LOGS/precision.log" 2>/dev/null
    echo "-- curve:"
    cat "$OUT/curve.csv" 2>/dev/null
    tail -1 "$LOGS/curve.log" 2>/dev/null
} >"$OUT/summary.txt"
finish
