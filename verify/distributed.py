"""The Dask engine's public name: ``audit verify-archive --engine dask`` imports it only when
asked, so that nothing else imports Dask (ADR 0026)."""

from verify._dask import verify_on_dask

__all__ = ["verify_on_dask"]
