"""The version of the evidence-audit distribution, named in every verdict."""

VERSION = "0.1.0"
