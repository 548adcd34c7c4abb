# The README's two commands. Both create .venv when it is missing and install
# what they need from pyproject.toml, so they work on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python

.PHONY: run test test-fast docs clean

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

$(VENV)/.installed-docs: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[docs]'
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

# The documentation site into docs/_build/html; a warning is an error,
# and --keep-going reports every warning before failing. The API pages (docs/api) are
# generated from the docstrings on every build; notebooks are shown with their stored
# outputs, never executed here (tests/notebooks executes them).
docs: $(VENV)/.installed-docs
	$(PY) -m sphinx -b html -W --keep-going -q docs docs/_build/html
	@echo "docs: open docs/_build/html/index.html"

clean:
	rm -rf $(VENV) runs .pytest_cache .hypothesis docs/_build docs/api
