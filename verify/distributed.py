"""The Dask engine's public names: ``audit verify-archive``, ``rank`` and ``rejudge`` with
``--engine dask`` import it only when asked, so that nothing else imports Dask (ADR 0026)."""

from verify._dask import judge_on_dask, verify_on_dask

__all__ = ["judge_on_dask", "verify_on_dask"]
