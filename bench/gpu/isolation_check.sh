#!/bin/bash
# The MPS path of the node agent on a real card (README "A share is a
# limit"). Needs root, an NVIDIA driver with nvidia-cuda-mps-control, and a
# build dir with fracpack, bench/isolation_env and bench/cuda_alloc_probe.
#
#   bench/gpu/isolation_check.sh BUILD_DIR            on a GPU node: the check
#   bench/gpu/isolation_check.sh BUILD_DIR --cpu-only  what runs without a GPU (CI)
#
# On a card: `fracpack mps-control-daemon` takes GPU 0 (EXCLUSIVE_PROCESS, the
# control daemon up); two clients get the environment the agent writes for
# an 8 GiB / 25 % share and a 20 GiB / 60 % share (bench/isolation_env calls
# node/isolation.h) and allocate until refused: each must stop at its share,
# within one 256 MiB chunk. A process that is not an MPS client must get no
# context on the card. Then the daemon stops and the compute mode is put back.
set -euo pipefail
build=${1:?usage: isolation_check.sh BUILD_DIR [--cpu-only]}
mode=${2:-gpu}
env_tool=$build/bench/isolation_env
probe=$build/bench/cuda_alloc_probe
fail() { echo "isolation_check: FAIL: $*"; exit 1; }

# What runs anywhere: the environment for both shares, and the probe without a driver.
expect_env() {  # share-mib cores want-limit want-percent
  local out; out=$("$env_tool" --isolation mps --uuid GPU-check --card-mib 81920 --share-mib "$1" --cores "$2" --mps-dir /run/fracpack/mps)
  grep -qx "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=$3" <<<"$out" || fail "share $1 MiB: no CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=$3 in: $out"
  grep -qx "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$4" <<<"$out" || fail "share $2 milli: no CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$4 in: $out"
  grep -qx "CUDA_MPS_PIPE_DIRECTORY=/run/fracpack/mps/pipe" <<<"$out" || fail "no pipe directory in: $out"
}
expect_env 8192 250 0=8192M 25
expect_env 20480 600 0=20480M 60
if [ "$mode" = --cpu-only ]; then
  set +e; out=$(LD_LIBRARY_PATH=/nonexistent "$probe" 2>&1); rc=$?; set -e
  if [ $rc -eq 77 ]; then echo "isolation_check: probe without a driver: $out"
  elif [ $rc -eq 0 ] || [ $rc -eq 2 ]; then echo "isolation_check: a CUDA driver is here: $out"
  else fail "probe exit $rc: $out"; fi
  echo "isolation_check: cpu parts ok"
  exit 0
fi

command -v nvidia-smi >/dev/null || fail "no nvidia-smi: not a GPU node"
read -r uuid card_mib < <(nvidia-smi -i 0 --query-gpu=uuid,memory.total --format=csv,noheader,nounits | tr -d ',')
dir=$(mktemp -d /tmp/fp-mps-check.XXXX)
"$build/fracpack" mps-control-daemon --mps-dir "$dir" --log-format logfmt >"$dir/daemon.log" 2>&1 &
daemon=$!
trap 'kill -TERM $daemon 2>/dev/null; wait $daemon 2>/dev/null; echo "--- daemon log"; cat "$dir/daemon.log"; echo "compute mode after: $(nvidia-smi -i 0 --query-gpu=compute_mode --format=csv,noheader)"' EXIT
for _ in $(seq 100); do grep -q '"state":"ready"' "$dir/status" 2>/dev/null && break; sleep 0.2; done
grep -q '"state":"ready"' "$dir/status" || fail "the MPS control daemon is not ready: $(cat "$dir/status" 2>/dev/null)"
echo "card $uuid ($card_mib MiB), compute mode now: $(nvidia-smi -i 0 --query-gpu=compute_mode --format=csv,noheader)"
client() {  # share-mib cores
  local -a env=()
  while IFS= read -r line; do [[ $line == \#* ]] || env+=("$line"); done < <("$env_tool" --isolation mps --uuid "$uuid" --card-mib "$card_mib" --share-mib "$1" --cores "$2" --mps-dir "$dir")
  env -i PATH="$PATH" "${env[@]}" "$probe" --chunk-mib 256
}
for share in "8192 250" "20480 600"; do
  set -- $share
  out=$(client "$1" "$2")
  got=$(sed -n 's/^allocated \([0-9]*\) MiB.*/\1/p' <<<"$out")
  echo "share $1 MiB / $(( $2 / 10 ))%: $out"
  [ -n "$got" ] || fail "no allocation figure"
  [ "$got" -le "$1" ] && [ "$got" -ge $(( $1 - 256 - 512 )) ] || fail "allocated $got MiB for a $1 MiB share"
done
set +e; out=$(env -i PATH="$PATH" "$probe" --max-mib 256); rc=$?; set -e
echo "not an MPS client: $out (exit $rc)"
[ $rc -eq 2 ] || fail "a process outside MPS used the card"
echo "isolation_check: ok"
