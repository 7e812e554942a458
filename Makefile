# The Kubernetes conformance suite against tinykube (tools/conformance.py; needs Go and kubectl).
#   make conformance                    the api selection (SELECTION=smoke|all to choose another)
#   make conformance-smoke              the short CI subset; fails below its pass floor
#   make conformance-envtest            controller-runtime's envtest suites, each on a fresh cluster
PYTHON ?= python
SELECTION ?= api

.PHONY: conformance conformance-smoke conformance-envtest

conformance:
	$(PYTHON) tools/conformance.py run --selection $(SELECTION)

conformance-smoke:
	$(PYTHON) tools/conformance.py run --selection smoke

conformance-envtest:
	$(PYTHON) tools/conformance.py envtest
