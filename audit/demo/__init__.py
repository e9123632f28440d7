"""The demo, in one package: what ``audit demo`` and ``make demo`` run, and its equipment.

- :mod:`audit.demo.pipeline`: the demo itself (``run_demo``, ``run_pipeline``, ``SCENARIOS``,
  ``DEMO_DIGEST``): build the example bundles, verify them, flip a bit, record real runs.
- :mod:`audit.demo.examples`: the example builder (``EXAMPLES_DIR``, ``build_example``,
  ``build_upstream``), from the demo's data: ``examples/runs``, ``examples/upstreams`` and
  ``examples/expected-digests.json`` in the source tree, ``audit/demo/_examples`` in a wheel.
- :mod:`audit.demo.reference_endpoint`: the deterministic model server the demo's runs ask.

The package imports none of them, so a test that needs only the reference endpoint does not
load the runner.
"""
