#!/usr/bin/env bash
# arraybench's GPU acceptance (benchmarks/gpu_acceptance.py; docs/gpu.md says when and how).
#   bash benchmarks/gpu_acceptance.sh [--out DIR] [--wheels DIR]
# PYTHON: the interpreter that has torch, jax and cupy (default python3); the checkout needs no
# install: the script puts it on PYTHONPATH, and --wheels DIR supplies, offline, the pure-Python
# packages that interpreter lacks (pip install --no-index --find-links DIR).
# After the acceptance, a small run per GPU library prints each cell's peak memory and energy per
# call (how each was measured, or why not) into DIR/footprint.txt: a GPU cell with no peak, a peak
# under the output's own size, or no energy figure and no reason, is flagged (exit status 1).
set -euo pipefail
cd "$(dirname "$0")/.."
py="${PYTHON:-python3}"
out=gpu_acceptance_out  # gpu_acceptance.py's default, from the checkout
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    case "${args[i]}" in
        --out) out="${args[i + 1]:-$out}" ;;
        --out=*) out="${args[i]#--out=}" ;;
    esac
done
status=0
"$py" benchmarks/gpu_acceptance.py "$@" || status=$?
# 2: bad options or a dependency missing; 3: no NVIDIA GPU here (said in one line): nothing to add
if [ "$status" -eq 2 ] || [ "$status" -eq 3 ]; then exit "$status"; fi

echo; echo "=== 7. peak memory and energy per call, a small run per GPU library ==="
# The wheels' site that gpu_acceptance.py installed (if any) and the checkout, as its children had.
export PYTHONPATH="$out/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
"$py" -m arraybench run --devices gpu --backends torch,jax,cupy --workloads elementwise,fft \
    --sizes large --processes 2 --max-time 0.3 --min-samples 5 --no-store --no-plots --overwrite \
    -o "$out/footprint" > "$out/footprint.log" 2>&1 || true  # its verdicts are not this step's
"$py" - "$out/footprint/results.json" <<'PY' | tee "$out/footprint.txt" || status=1
import json, sys
try:
    records = json.load(open(sys.argv[1]))["records"]
except (OSError, ValueError, KeyError) as exc:
    print(f"FLAG: no footprint run to read ({exc}); see footprint.log")
    sys.exit(1)
flagged = 0
for r in records:
    if r["device"] != "gpu" or r.get("transfer"):
        continue
    cell = f"{r['backend']}/{r['workload']}/{r['size_label']}"
    if r["status"] != "ok":
        print(f"{cell:26} {r['status']}: {str(r.get('reason', ''))[:100]}")
        continue
    peak, size, joules = r.get("peak_bytes"), r.get("output_bytes"), r.get("energy_j")
    flag = (peak is None or (size and peak < size)  # a call holds its own output at least
            or (joules is None and not r.get("energy_note")))
    flagged += flag
    peak_text = "-" if peak is None else f"{peak / 1e6:.3g} MB" + (f" ({peak / size:.1f}x the output)" if size else "")
    energy_text = "-" if joules is None else f"{joules * 1e3:.3g} mJ"
    print(f"{cell:26} {'FLAG ' if flag else ''}peak {peak_text}: {r.get('peak_note', '')}")
    print(f"{'':26} energy {energy_text}/call: {r.get('energy_note', '')}")
sys.exit(1 if flagged else 0)
PY
exit "$status"
