# The README's two commands. Both create .venv when it is missing and install
# what they need from pyproject.toml, so they work on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python

.PHONY: run test clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Re-install whenever pyproject.toml changes.
$(VENV)/.installed-run: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed-run

run: $(VENV)/.installed-run
	$(VENV)/bin/jaxsamp run configs/quickstart.yaml

# The whole suite, the 8-device tests included (they start their own child
# processes with XLA_FLAGS=--xla_force_host_platform_device_count=8).
test: $(VENV)/.installed-test
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) runs .pytest_cache .hypothesis
