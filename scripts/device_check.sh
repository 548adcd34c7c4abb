#!/usr/bin/env bash
# The prepared device check (scripts/DEVICE.md): install what the device image lacks from the carried wheels in
# .whl/, show the accelerator, run the gpu-marked tests, then `jaxsamp bench run device --device-budget` with
# what is left of the time budget.
#
# Usage (repository root): bash scripts/device_check.sh [BUDGET_SECONDS] [jaxsamp bench run options...]
#   BUDGET_SECONDS defaults to $DEVICE_CHECK_BUDGET, else 480; results go to $OUT (else benchmarks/results),
#   which starts with the device results recorded so far, so that only what this device kind lacks runs.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
BUDGET="${DEVICE_CHECK_BUDGET:-480}"
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then BUDGET="$1"; shift; fi
OUT="${OUT:-benchmarks/results}"
mkdir -p "$OUT"
SITE=/tmp/site
start=$(date +%s)

# 1. the wheels the image lacks, into $SITE; a wheel whose distribution the image already has is skipped, so
#    nothing shadows the image's own jax, numpy, flax, ... (the image's version is printed instead)
if compgen -G ".whl/*.whl" > /dev/null; then
  wanted=()
  for whl in .whl/*.whl; do
    dist="$(basename "$whl" | cut -d- -f1)"
    have="$(python3 -c "import importlib.metadata as m, sys
try: print(m.version(sys.argv[1]))
except m.PackageNotFoundError: pass" "$dist")"
    if [[ "$dist" == "tfp_nightly" && -z "$have" ]]; then  # the image may carry the release instead
      have="$(python3 -c "import importlib.metadata as m
try: print('tensorflow-probability', m.version('tensorflow-probability'))
except m.PackageNotFoundError: pass")"
    fi
    if [[ -n "$have" ]]; then echo "image has $dist $have: skipping $(basename "$whl")"; else wanted+=("$whl"); fi
  done
  if (( ${#wanted[@]} )); then
    echo "installing ${#wanted[@]} wheels into $SITE: ${wanted[*]##*/}"
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
      "${wanted[@]}" || { echo "DEVICE CHECK: pip install of the carried wheels failed"; exit 3; }
  fi
else
  echo "no .whl/ folder: nothing to install (carry .whl, see scripts/DEVICE.md)"
fi
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"

# 2. what the device is, and whether everything jaxsamp needs imports
nvidia-smi -L 2>/dev/null || echo "nvidia-smi: not available"
backend="$(timeout 120 python3 -c 'import jax; print("jax", jax.__version__, jax.devices(), file=__import__("sys").stderr); print(jax.default_backend())')" \
  || { echo "DEVICE CHECK: jax does not start"; exit 4; }
# tests/conftest.py adds XLA's CPU-backend flags unless JAX_PLATFORMS names another platform; a GPU build of
# XLA aborts on them (seen on the H200 with jax 0.11.2: "Unknown flag in XLA_FLAGS", every test process killed)
export JAX_PLATFORMS="$backend"
missing="$(timeout 120 python3 - <<'PY'
import importlib
for name in ("jaxsamp", "blackjax", "distrax", "tensorflow_probability.substrates.jax", "ott", "ot", "omegaconf",
             "optax", "chex", "flax", "orbax.checkpoint", "numpyro", "sklearn", "matplotlib", "scipy", "tqdm", "pytest",
             "hypothesis"):
    try:
        importlib.import_module(name)
    except Exception as error:  # report every one, not just the first
        print(f"{name} ({type(error).__name__}: {error})")
PY
)"
if [[ -n "$missing" ]]; then
  echo "DEVICE CHECK: these imports fail; add their wheels to .whl/ (scripts/DEVICE.md):"
  echo "$missing"
  exit 5
fi

# 3. the gpu-marked tests, collecting only the files that hold them, within TESTS_CAP seconds (0: none); the
#    device's memory is not preallocated (the kill-and-resume tests start child processes); the log in $OUT
TESTS_CAP="${TESTS_CAP:-150}"
if [[ "$TESTS_CAP" -gt 0 ]]; then
  mapfile -t files < <(grep -rl "pytest.mark.gpu" tests --include "test_*.py" | sort)
  XLA_PYTHON_CLIENT_PREALLOCATE=false timeout --kill-after=10 "$TESTS_CAP" python3 -m pytest -m gpu -q \
    -p no:cacheprovider -o addopts= "${files[@]}" > "$OUT/gpu_tests.log" 2>&1
  tests_rc=$?
  echo "gpu tests (${#files[@]} files) exit $tests_rc: $(tail -1 "$OUT/gpu_tests.log")"
fi

# 4. the benchmark cells this device kind has not yet recorded, most valuable first, each in its own process,
#    into $OUT, which starts with what benchmarks/results holds for the device suite: its results files, and the
#    training cells' checkpoints where the call carried them (carry: benchmarks/results/checkpoints)
cp benchmarks/results/device.*.json "$OUT"/ 2>/dev/null || true
if compgen -G "benchmarks/results/checkpoints/device.*" > /dev/null; then
  mkdir -p "$OUT/checkpoints" && cp -r benchmarks/results/checkpoints/device.* "$OUT/checkpoints/" 2>/dev/null || true
fi
left=$(( BUDGET - ($(date +%s) - start) ))
echo "jaxsamp bench run device: ${left} s of the ${BUDGET} s budget left"
timeout --kill-after=10 $(( left + 20 )) python3 -m jaxsamp bench run device --device-budget "$left" \
  --results-dir "$OUT" "$@"
rc=$?
echo "jaxsamp bench run device exit $rc; results:"
ls -la "$OUT"
exit $rc
