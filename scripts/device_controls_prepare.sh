#!/bin/bash
# Builds gpu_carry/ (git-ignored), everything scripts/device_controls.sh needs besides the checkout,
# from the data root $QT_HARD_DATA. Run from anywhere; rebuilds the folder from scratch:
#
#   QT_HARD_DATA=/path/to/data PY=.venv/bin/python bash scripts/device_controls_prepare.sh
#
# Writes
#   gpu_carry/data.tar.xz        tu/ (MUTAG, PTC_MR, ENZYMES, IMDB-BINARY, IMDB-MULTI, SOURCE.md) and
#                                cifar10/ of the data root, as the data root's own layout
#   gpu_carry/kvn_cache.tar.xz   the k-versus-N cache folder (what `qt-hard grid run k-vs-n ... --plan` builds): the Wiki
#                                folder wiki_3029_200/ and its word-token cache tokens/, plus the
#                                prepared marker. The folder holds the FIRST 1,000 ARTICLES of Wiki-3029
#                                only (build_wiki takes articles in dump order, so they are Wiki-3029's
#                                first 1,000; Wiki-N for N <= 1,000 is a prefix of them and reads the same
#                                sentences, tokens and vocabulary as from the full folder), because the
#                                full folder and its tokens do not fit the carry. It serves the grids
#                                with N <= 1,000 only. Checked below: the vocabulary sizes of N = 100 and
#                                N = 1,000 are those of the full folder (878 and 7,209).
#   gpu_carry/CONTENTS.txt       what is there, with sizes
#
# The token cache is keyed on the article files' absolute paths, sizes and mtimes, so the cache is
# built at the fixed path $KVN_ROOT/cache (default /tmp/qt_hard_kvn/cache) with the files' mtimes set
# to a fixed time; device_controls.sh unpacks it at the same path, where the key matches and no
# tokenizing is needed (it tokenizes once before the cells if the key does not match).
# Optional: GRAPH_SEED=path/to/results.jsonl (a graph_table ledger of the same setup: 200 epochs, no
# overrides) is copied to gpu_carry/graph_seed.jsonl; its cells are then not run again.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python3}
: "${QT_HARD_DATA:?set QT_HARD_DATA to the data root (folders tu/, cifar10/, wikipedia/)}"
KVN_ROOT=${KVN_ROOT:-/tmp/qt_hard_kvn}
CARRY=gpu_carry
MTIME=1700000000
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}

rm -rf "$CARRY"
mkdir -p "$CARRY"

echo "== data.tar.xz (TU datasets without PROTEINS, CIFAR-10 subset)"
tar -C "$QT_HARD_DATA" -cf - tu/SOURCE.md tu/MUTAG tu/PTC_MR tu/ENZYMES tu/IMDB-BINARY tu/IMDB-MULTI cifar10 |
    xz -T2 -6 >"$CARRY/data.tar.xz"

echo "== Wiki-3029's first 1,000 articles and their tokens at $KVN_ROOT/cache"
rm -rf "$KVN_ROOT"
mkdir -p "$KVN_ROOT/cache"
WIKI=$KVN_ROOT/cache/wiki_3029_200
"$PY" -m qt_hard.cli data wiki --articles 1000 --sentences 200 --out "$WIKI" --no-progress
find "$WIKI" -exec touch -h -d "@$MTIME" {} +
"$PY" -m qt_hard.cli grid run k-vs-n configs/k_vs_n_b1000_long.yaml --cache "$KVN_ROOT/cache" --plan --no-estimate
"$PY" - "$KVN_ROOT/cache" <<'EOF'
import sys
from pathlib import Path
from qt_hard.data.wiki import wiki_prefix

cache = Path(sys.argv[1])
want = {100: 878, 1000: 7209}  # the full Wiki-3029 folder's (docs/benchmarks.md, results/k_vs_n/results.csv)
for n, v in want.items():
    wd = wiki_prefix(cache / "wiki_3029_200", n, min_count=50, seed=0, cache_dir=cache / "tokens")
    got = len(wd.vocab)
    print(f"Wiki-{n}: vocabulary {got} (full folder: {v})")
    if got != v:
        sys.exit(f"Wiki-{n}: vocabulary {got}, expected {v}: the carried prefix is not the full folder's")
EOF
tar -C "$KVN_ROOT" --format=posix -cf - cache | xz -T2 -6 >"$CARRY/kvn_cache.tar.xz"

if [ -n "${GRAPH_SEED:-}" ]; then
    cp "$GRAPH_SEED" "$CARRY/graph_seed.jsonl"
fi

{
    echo "gpu_carry for scripts/device_controls.sh (made by scripts/device_controls_prepare.sh)"
    echo "data root: $QT_HARD_DATA; k-versus-N cache built at $KVN_ROOT/cache (unpack it there)"
    ls -l "$CARRY"
} >"$CARRY/CONTENTS.txt"
du -sh "$CARRY"
