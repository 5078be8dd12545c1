# Each target creates .venv when missing and installs the package with all extras and dev tools.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench clean

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[all,dev]'
	touch $(STAMP)

# The example port is meant to be blocked: exit 1 (findings at --fail-on error) is the expected result.
demo: $(STAMP)
	$(BIN)/nki-assist review examples/gemm_bias_relu/port.toml --format md || test $$? -eq 1

test: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) .pytest_cache build dist *.egg-info
