"""An archive's next tar at a URL is listed while the one before it is verified
(``verify.archive.listed_ahead``): in order, one ahead, refusals carried to their source."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from audit._archive import pack
from bundle_schema.errors import InvalidInput
from tests.factories import write_small_bundle
from tests.http_range import RangeServer, serve, url_of
from verify import url_snapshots
from verify.archive import listed_ahead


@pytest.fixture
def site(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    root.mkdir()
    for name in ("a", "b", "c"):
        write_small_bundle(tmp_path / name, run_id=f"run-{name}", durable=False)
        pack(tmp_path / name, root / f"{name}.tar")
    return root


def _asked(server: RangeServer, leaf: str) -> bool:
    with server.lock:
        return any(r.path.endswith(f"/{leaf}") for r in server.requests)


def test_the_next_tar_is_listed_while_one_is_verified(site: Path) -> None:
    with serve(site) as server, url_snapshots():
        urls = [url_of(server, site / f"{n}.tar") for n in ("a", "b", "c")]
        listing = listed_ahead(urls)
        source, first = next(listing)
        assert source == urls[0] and first.result().kind == "tar"
        deadline = time.monotonic() + 10
        while not _asked(server, "b.tar"):  # asked for before the caller wants it
            assert time.monotonic() < deadline, server.requests
            time.sleep(0.01)
        assert not _asked(server, "c.tar")  # one ahead, no more
        rest = list(listing)
        assert [s for s, _ in rest] == urls[1:]
        assert all(f.result().kind == "tar" for _, f in rest)


def test_a_refusal_is_its_sources_and_the_order_holds(site: Path, tmp_path: Path) -> None:
    local = tmp_path / "a"
    with serve(site) as server, url_snapshots():
        missing = f"{server.url}/nowhere.tar"
        given = [url_of(server, site / "b.tar"), missing, local, url_of(server, site / "c.tar")]
        got = list(listed_ahead(given))
        assert [s for s, _ in got] == given  # each listing read while the server is up
        assert got[0][1].result().kind == "tar" and got[2][1].result().kind == "directory"
        assert got[3][1].result().kind == "tar"
        with pytest.raises(InvalidInput, match=r"nowhere\.tar"):
            got[1][1].result()
