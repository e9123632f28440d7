"""Reference SparkBench harness."""
VERSION = "5.2.0"
