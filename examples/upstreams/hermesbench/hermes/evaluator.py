"""hermesbench-v2-automated-1: frozen cases mapped to correctness, security and requirement ids."""
EVALUATOR_ID = "hermesbench-v2-automated-1"
