# Two commands on a fresh machine:  make demo  ·  make test
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint setup clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --config-settings editable_mode=compat -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	@# bytecode for ncui's own modules: an editable install has none, and where PYTHONDONTWRITEBYTECODE is
	@# set Python never writes it, so every start would compile ncui again (~40 ms before the first frame)
	@$(BIN)/python -m compileall -q ncui >/dev/null
	$(BIN)/ncui --demo

# The gate first (lint, format, types: ncui outside the box, its lower layers strict), then the suite.
lint: $(STAMP)
	$(BIN)/ruff check ncui tests bench tools
	$(BIN)/ruff format --check ncui tests bench tools
	$(BIN)/mypy

# Four workers on two cores: most tests wait on the box, a terminal or a daemon (load stays near 1 serially).
# Every test has its own box, ports, tmux socket, sshd, Slurm and state dir, so they run side by side.
# PYTEST_ARGS="-n 0" runs them one after another.
PYTEST_ARGS ?= -n 4
test: lint
	@# bytecode for ncui's modules (as for demo): the suite starts hundreds of ncui processes (the kubectl sign-in
	@# plugin, ncui report, ncui sim), each of which would compile them again where PYTHONDONTWRITEBYTECODE is set
	@$(BIN)/python -m compileall -q ncui >/dev/null
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
