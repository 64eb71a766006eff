#!/bin/bash
# Builds gpu_carry_s2v/ (git-ignored), everything scripts/device_s2v.sh needs besides the checkout, from
# the data root $QT_HARD_DATA, in the data root's own layout. Run from anywhere; rebuilds the folder:
#
#   QT_HARD_DATA=/path/to/data PY=.venv/bin/python bash scripts/device_s2v_prepare.sh
#
# Writes
#   gpu_carry_s2v/books.tar       books/ (the .txt.xz books as they are, already compressed)
#   gpu_carry_s2v/rest.tar.xz     senteval/ with the six tasks of the curve (MR CR SUBJ MPQA TREC MRPC,
#                                 SOURCE.md), STS/ (STS12-16 of qt-table's namesake protocol, the STS
#                                 Benchmark) and wiki_1000_200/, Wiki-3029's first 1,000 articles as
#                                 build_wiki writes them (the bag-of-words speed case's data: the whole
#                                 Wikipedia dump does not fit the carry)
#   gpu_carry_s2v/CONTENTS.txt    what is there, with sizes
# and refuses to finish above 60 MiB in all (the device machine takes 64 MiB of carried files).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python3}
: "${QT_HARD_DATA:?set QT_HARD_DATA to the data root (folders books/, senteval/, wikipedia/)}"
CARRY=gpu_carry_s2v
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}

rm -rf "$CARRY"
mkdir -p "$CARRY"
echo "== books.tar"
tar -C "$QT_HARD_DATA" -cf "$CARRY/books.tar" books
echo "== Wiki-3029's first 1,000 articles"
"$PY" -m qt_hard.cli data wiki --articles 1000 --sentences 200 --out "$STAGE/wiki_1000_200" --no-progress
echo "== rest.tar.xz (six SentEval tasks, STS, Wiki-1000)"
mkdir -p "$STAGE/senteval"
for t in MR CR SUBJ MPQA TREC MRPC STS SOURCE.md; do cp -r "$QT_HARD_DATA/senteval/$t" "$STAGE/senteval/"; done
tar -C "$STAGE" -cf - senteval wiki_1000_200 | xz -T2 -6 >"$CARRY/rest.tar.xz"
{
    echo "gpu_carry_s2v for scripts/device_s2v.sh (made by scripts/device_s2v_prepare.sh from $QT_HARD_DATA)"
    ls -l "$CARRY"
} >"$CARRY/CONTENTS.txt"
kib=$(du -sk "$CARRY" | cut -f1)
echo "gpu_carry_s2v: $((kib / 1024)) MiB"
if [ "$kib" -gt $((60 * 1024)) ]; then
    echo "error: gpu_carry_s2v is over 60 MiB (the device machine carries at most 64 MiB)" >&2
    exit 1
fi
