# proposalkit — `make report` and `make test` work on a fresh clone (they create .venv).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
# Every direct and transitive version the suite passed on (`make lock` refreshes it on purpose):
# installs from a fresh clone get these, so a new release elsewhere cannot turn the suite red.
# --build-constraint pins setuptools and wheel in pip's isolated build of the project too.
LOCK   := constraints.txt
LOCKED := --constraint $(LOCK) --build-constraint $(LOCK)
PACKAGE := $(wildcard proposalkit/*.py proposalkit/*/*.py proposalkit/catalog/*.yaml proposalkit/render/templates/*)
WORKLOADS := $(wildcard workloads/*.yaml)
PILOT_LOGS := $(wildcard workloads/pilots/*)
ACCOUNTING := $(wildcard workloads/accounting/*.sacct workloads/accounting/*.csv)

.PHONY: report progress test test-latest lock golden docs errors bench clean

# Build section B (build/report.md, .html, .pdf) and its supplement (build/supplement.md, .html, .pdf) from
# workloads/*.yaml (`make report PROGRESS=1` also builds the progress report below, beside it).
report: build/report.pdf $(if $(PROGRESS),build/progress.pdf)

# After the award: build/progress.{md,html,pdf}, the plan beside the job accounting in workloads/accounting/.
progress: build/progress.pdf

# Create the virtual environment and install the project with its test extras.
# Create the virtual environment and install the project with its test extras, at the locked versions
# (pip first: --build-constraint needs pip ≥ 25.3, and the locked pip is the one the lock was made with).
$(STAMP): pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --constraint $(LOCK) --upgrade pip
	$(PY) -m pip install --quiet $(LOCKED) -e '.[test]'
	touch $(STAMP)

build/report.pdf: $(STAMP) $(WORKLOADS) $(PILOT_LOGS) $(PACKAGE)
	$(VENV)/bin/proposalkit report $(WORKLOADS) -o build --format md,html,pdf

build/progress.pdf: $(STAMP) $(WORKLOADS) $(PILOT_LOGS) $(ACCOUNTING) $(PACKAGE)
	$(VENV)/bin/proposalkit usage $(WORKLOADS) --jobs $(ACCOUNTING) -o build --report-format md,html,pdf

# Run the test suite.
test: $(STAMP)
	$(PY) -m pytest

# The suite against the newest releases that pyproject.toml's ranges admit, in a throwaway
# environment (not part of CI): a break is seen here before it reaches users' fresh installs.
LATEST := build/latest-venv
test-latest:
	rm -rf $(LATEST)
	$(PYTHON) -m venv $(LATEST)
	$(LATEST)/bin/python -m pip install --quiet --upgrade pip setuptools wheel
	$(LATEST)/bin/python -m pip install --quiet --upgrade -e '.[test]'
	$(LATEST)/bin/python -m pytest -p no:cacheprovider

# Refresh constraints.txt on purpose: the newest releases, kept only if the whole suite passes on them.
# Review the diff of constraints.txt and commit it with the reason.
lock: test-latest
	{ echo "# Locked versions: the suite passed on these (\`make lock\`, $$($(LATEST)/bin/python -V))."; \
	  echo "# Used as pip constraints by make report, make test, .ci/run and .github/workflows."; \
	  $(LATEST)/bin/python -m pip freeze --all --exclude-editable | LC_ALL=C sort -f; } > $(LOCK).tmp
	mv $(LOCK).tmp $(LOCK)

# Regenerate the golden reports in tests/golden/ (review the diff before committing).
golden: $(STAMP)
	$(PY) -m tests.golden_update

# Regenerate proposalkit/catalog/errors.yaml, each validation row's residual by regime (the plans' ranges), from
# the validation sets planned by today's tree (benchmarks/errors.py). Review the diff; tests/test_ranges.py fails
# while it is stale.
errors: $(STAMP)
	$(PY) benchmarks/errors.py

# Regenerate what the documentation generates: docs/workload-format.md, docs/cli.md, the JSON Schema, the
# marked blocks and examples of README.md and docs/*.md (tools/gendocs.py), docs/validation.md. Review the diff.
docs: errors
	$(PY) tools/gendocs.py
	$(PY) benchmarks/validation.py

# Time `plan` on 1 and on 1000 generated workloads (figures quoted in the README).
bench: $(STAMP)
	$(PY) benchmarks/plan_bench.py

# Remove build outputs (keeps .venv).
clean:
	rm -rf build
