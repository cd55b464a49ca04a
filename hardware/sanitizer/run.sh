#!/bin/bash
# Runs every case of bugs.cu plain and under compute-sanitizer's four tools, 8 at a time.
# Usage (device): bash run.sh DIR OUTDIR   -- DIR holds bugs.cu (and a prebuilt ./bugs)
set -u
DIR=$1; OUTD=$2
cd "$DIR"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nvcc --version | tail -1;
  compute-sanitizer --version | tail -1; date -u; } > "$OUTD/env.txt" 2>&1
if ! ./bugs list > /dev/null 2>&1; then
  nvcc -gencode=arch=compute_90a,code=sm_90a -lineinfo -o bugs bugs.cu >> "$OUTD/env.txt" 2>&1
fi
mkdir -p logs
one() {   # case tool
  local c=$1 t=$2 f=logs/$1.$2.txt
  if [ "$t" = plain ]; then timeout 20 ./bugs "$c" > "$f" 2>&1
  elif [ "$t" = racecheck ]; then
    timeout 60 compute-sanitizer --tool racecheck --racecheck-detect-level info \
      --print-limit 4 ./bugs "$c" > "$f" 2>&1
  else timeout 60 compute-sanitizer --tool "$t" --print-limit 4 ./bugs "$c" > "$f" 2>&1
  fi
  echo "exit $?" >> "$f"
}
export -f one
for c in $(./bugs list); do for t in plain memcheck racecheck initcheck synccheck; do
  echo "$c $t"; done; done | xargs -P 8 -n 2 bash -c 'one "$0" "$1"'
for f in logs/*.txt; do echo "=== $(basename $f .txt)"; cat "$f"; done > "$OUTD/cs_logs.txt"
