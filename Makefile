# The README's two commands. Both create .venv when it is missing and install
# what they need from pyproject.toml, so they work on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python

.PHONY: run test test-fast clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Re-install whenever pyproject.toml changes. `make run` installs the numpyro
# extra as well: the README's first example (eight schools) is a numpyro model.
$(VENV)/.installed-run: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[numpyro]'
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed-run

run: $(VENV)/.installed-run
	$(VENV)/bin/jaxsamp run quickstart

# The whole suite, the 8-device and two-process tests included (they start
# their own child processes), one pytest-xdist worker per core, an idle worker
# stealing queued tests from a busy one so that no worker is left with a tail of
# long tests; the 30 slowest tests are listed at the end, to keep the suite
# inside its 15-minute aim. tests/conftest.py sets XLA's fast-compile flags.
test: $(VENV)/.installed-test
	$(PY) -m pytest -q -n auto --dist worksteal --durations=30

# The edit loop: everything but the long statistical runs, the benchmark
# scripts, the notebooks and the multi-device/multi-process children.
test-fast: $(VENV)/.installed-test
	$(PY) -m pytest -q -n auto --dist worksteal -m "not slow and not multidevice" --ignore=tests/scripts --ignore=tests/notebooks

clean:
	rm -rf $(VENV) runs .pytest_cache .hypothesis
