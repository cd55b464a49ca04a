#!/bin/bash
set -x
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version --format=csv > info.txt 2>&1
nvcc --version >> info.txt 2>&1
date -u >> info.txt
nvcc -O2 -o capture capture.cu -lcuda 2> build.log || { cat build.log; exit 1; }
mkdir -p rec
./capture rec > rec/stdout.txt 2> rec/stderr.txt
cp info.txt rec/
tar czf "$OUT/rec.tgz" rec
cat rec/stdout.txt rec/stderr.txt | tail -40
ls -la rec | head -40
