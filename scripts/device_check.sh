#!/usr/bin/env bash
# The prepared device check of issue 45 (scripts/DEVICE.md): install what the device image lacks from the
# carried wheels in .whl/, show the accelerator, then run scripts/device_check.py within a time budget.
#
# Usage (repository root): bash scripts/device_check.sh [BUDGET_SECONDS] [device_check.py options...]
#   BUDGET_SECONDS defaults to $DEVICE_CHECK_BUDGET, else 480; results go to $OUT (else benchmarks/results).
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

# 3. the check itself: its own per-phase caps end it within the budget left; timeout is the backstop
left=$(( BUDGET - ($(date +%s) - start) ))
echo "device_check.py: ${left} s of the ${BUDGET} s budget left"
timeout --kill-after=10 $(( left + 20 )) python3 scripts/device_check.py --out "$OUT" --budget-seconds "$left" "$@"
rc=$?
echo "device_check.py exit $rc; results:"
ls -la "$OUT"
exit $rc
