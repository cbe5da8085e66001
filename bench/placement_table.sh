#!/usr/bin/env bash
# The placement table of README "Placement quality": unallocated GPU at 130 %
# of capacity (100 - alloc@130, mean over seeds) per workload for FGD,
# bestfit and fracpack, the ratio to FGD, and seconds per run; on the five
# public openb traces and on mixes built from the default trace with
# `fracpack mix openb` (the FGD paper's recipes at other strengths).
#
#   bench/placement_table.sh [--fracpack BIN] [--baseline BIN] [--seeds 42-51] [--trace-dir DIR] [--out DIR]
#
# --baseline adds the columns of another fracpack binary (an older build:
# "before"); the mixes are written once as CSV files (--out, default a
# temporary folder) so that both binaries replay the very same pods.
set -euo pipefail
fracpack=build/fracpack
baseline=""
seeds=42-51
trace_dir=../shared/traces/openb
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --fracpack) fracpack=$2; shift 2 ;;
    --baseline) baseline=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --trace-dir) trace_dir=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--fracpack BIN] [--baseline BIN] [--seeds 42-51] [--trace-dir DIR] [--out DIR]" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || out=$(mktemp -d)
mkdir -p "$out"

public=(default cpu100 gpushare40 gpuspec33 multigpu20)
mixes=(cpu5 cpu10 cpu25 cpu40 gpushare60 gpushare80 gpushare100 gpuspec10 gpuspec20 gpuspec50 gpuspec70
       multigpu30 multigpu40 multigpu50 multigpu60 multigpu40+gpushare60 gpuspec33+multigpu40 gpushare60+cpu30
       gpushare80+gpuspec50)

for m in "${mixes[@]}"; do
  [ -f "$out/$m.csv" ] || "$fracpack" mix openb --trace-dir "$trace_dir" --mix "$m" --output "$out/$m.csv"
done

summary() {  # binary, pods file, policies -> one JSON line per policy: policy mean-unallocated median-seconds
  "$1" replay openb --trace-dir "$trace_dir" --pods "$2" --policy "$3" --seeds "$seeds" --json |
    python3 -c 'import json,sys
for s in json.load(sys.stdin)["summary"]:
    print(s["policy"], round(100 - s["alloc_at_130"], 4), round(s["seconds_per_run_median"], 3))'
}

if [ -n "$baseline" ]; then
  echo "| workload | FGD | bestfit | fracpack before | fracpack after | before / FGD | after / FGD | s/run FGD | s/run before | s/run after |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
else
  echo "| workload | FGD | bestfit | fracpack | fracpack / FGD | s/run FGD | s/run fracpack |"
  echo "|---|---|---|---|---|---|---|"
fi
for w in "${public[@]}" "${mixes[@]}"; do
  if [[ " ${public[*]} " == *" $w "* ]]; then pods="$trace_dir/openb_pod_list_$w.csv"; else pods="$out/$w.csv"; fi
  declare -A u=() t=()
  while read -r p un sec; do u[$p]=$un; t[$p]=$sec; done < <(summary "$fracpack" "$pods" fgd,bestfit,fracpack)
  if [ -n "$baseline" ]; then
    read -r _ bu bt < <(summary "$baseline" "$pods" fracpack)
    python3 -c "f,b,o,a=$(echo "${u[fgd]},$bu,${u[fracpack]},${u[bestfit]}");print('| $w | %.2f | %.2f | %.2f | %.2f | %.3f | %.3f | ${t[fgd]} | $bt | ${t[fracpack]} |' % (f,a,b,o,b/f,o/f))"
  else
    python3 -c "f,o,a=$(echo "${u[fgd]},${u[fracpack]},${u[bestfit]}");print('| $w | %.2f | %.2f | %.2f | %.3f | ${t[fgd]} | ${t[fracpack]} |' % (f,a,o,o/f))"
  fi
done
