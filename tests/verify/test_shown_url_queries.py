"""How a URL is shown (ADR 0037): the value of a query parameter that carries a credential (a
presigned URL's signature, a SAS, a token) is masked, every other parameter kept as given and in
order, in every message and report; the archive reports of rank, rejudge and verify-archive,
read from a real HTTP server on 127.0.0.1, never show a signature."""

from __future__ import annotations

import contextlib
import json
import os
import socketserver
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit._archive import pack
from audit.cli import main
from tests.factories import write_small_bundle
from tests.http_range import RangeServer, serve
from verify._remote import URL_CREDENTIAL_PARAMETERS, masked_text, shown_url
from verify.archive import MASKED_TWIN, ordered
from verify.judging import walked

S3_V4 = (
    "X-Amz-Algorithm=AWS4-HMAC-SHA256"
    "&X-Amz-Credential=AKIDEXAMPLE%2F20261202%2Fus-east-1%2Fs3%2Faws4_request"
    "&X-Amz-Date=20261202T000000Z&X-Amz-Expires=3600"
    "&X-Amz-Security-Token=IQoJb3JpZ2luX2VjEXAMPLE%3D"
    "&X-Amz-SignedHeaders=host&versionId=3HL4kqtJlcpXroDTDmJ-rmSpXd3dIbrHY"
    "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"
)
S3_V4_SHOWN = (
    "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=***"
    "&X-Amz-Date=20261202T000000Z&X-Amz-Expires=3600&X-Amz-Security-Token=***"
    "&X-Amz-SignedHeaders=host&versionId=3HL4kqtJlcpXroDTDmJ-rmSpXd3dIbrHY&X-Amz-Signature=***"
)


@pytest.mark.parametrize(
    ("query", "shown"),
    [
        (S3_V4, S3_V4_SHOWN),
        (  # S3 Signature Version 2, with a session token
            "AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Expires=1796000000"
            "&x-amz-security-token=FQoGZXIvYXdzEXAMPLE&Signature=vjbyPxybdZaNmGa%2ByT272YEAiv4%3D",
            "AWSAccessKeyId=***&Expires=1796000000&x-amz-security-token=***&Signature=***",
        ),
        (  # Google Cloud Storage V4
            "X-Goog-Algorithm=GOOG4-RSA-SHA256"
            "&X-Goog-Credential=runner%40proj.iam.gserviceaccount.com%2F20261202%2Fauto"
            "&X-Goog-Date=20261202T000000Z&X-Goog-Expires=900&X-Goog-SignedHeaders=host"
            "&generation=1796000000123456&X-Goog-Signature=8f1e2d3c4b5a",
            "X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=***"
            "&X-Goog-Date=20261202T000000Z&X-Goog-Expires=900&X-Goog-SignedHeaders=host"
            "&generation=1796000000123456&X-Goog-Signature=***",
        ),
        (  # Google Cloud Storage V2
            "GoogleAccessId=runner%40proj.iam.gserviceaccount.com&Expires=1796000000"
            "&Signature=BxR0aW5n%2Bc2ln",
            "GoogleAccessId=***&Expires=1796000000&Signature=***",
        ),
        (  # Azure Storage SAS: only sig is the credential
            "sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-03T00:00:00Z&spr=https"
            "&sig=Jd5Lh%2FfvvE5ZzF0V0ZbQ%3D",
            "sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-03T00:00:00Z&spr=https&sig=***",
        ),
        (  # CloudFront: the key pair id is masked too (KEY), the policy's expiry kept
            "Expires=1796000000&Signature=nitfHRCrtziwO2HwPfWw~yYDhUF5EwRunQA-j19DzZrv"
            "&Key-Pair-Id=K2JCJMDEHXQW5F",
            "Expires=1796000000&Signature=***&Key-Pair-Id=***",
        ),
        (  # generic names: pins.SECRET_NAME
            "token=ghp_zq9&access_token=ya29.zq9&api_key=zq9&apikey=zq9&client_secret=zq9"
            "&password=zq9&auth=zq9&key=AIzaSyzq9&refresh_token=zq9&part=2",
            "token=***&access_token=***&api_key=***&apikey=***&client_secret=***"
            "&password=***&auth=***&key=***&refresh_token=***&part=2",
        ),
    ],
)
def test_each_family_of_signed_urls_is_shown_without_its_credential(query: str, shown: str) -> None:
    """Every part of the URL but a credential's value is kept byte for byte."""
    url = f"https://runs.example.org/v5/run%20a.tar?{query}"
    assert shown_url(url) == f"https://runs.example.org/v5/run%20a.tar?{shown}"


@pytest.mark.parametrize("name", sorted(URL_CREDENTIAL_PARAMETERS))
def test_every_listed_name_is_masked_in_any_case(name: str) -> None:
    for written in (name, name.upper(), name.title(), name.swapcase()):
        url = f"https://h.test/x.tar?a=1&{written}=zq9-value&b=2"
        assert shown_url(url) == f"https://h.test/x.tar?a=1&{written}=***&b=2"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        # case variants
        ("https://h.test/x.tar?x-amz-signature=zq9", "https://h.test/x.tar?x-amz-signature=***"),
        ("https://h.test/x.tar?SIG=zq9&Sig=zq9", "https://h.test/x.tar?SIG=***&Sig=***"),
        ("https://h.test/x.tar?Access_Token=zq9", "https://h.test/x.tar?Access_Token=***"),
        # repeated parameters: each one masked, in place
        (
            "https://h.test/x.tar?sig=zq9-a&v=1&sig=zq9-b&sig=zq9-c",
            "https://h.test/x.tar?sig=***&v=1&sig=***&sig=***",
        ),
        # no value, or an empty one: nothing to hide, shown as given
        ("https://h.test/x.tar?sig", "https://h.test/x.tar?sig"),
        ("https://h.test/x.tar?sig=&token", "https://h.test/x.tar?sig=&token"),
        ("https://h.test/x.tar?", "https://h.test/x.tar?"),
        ("https://h.test/x.tar?&&v=1&", "https://h.test/x.tar?&&v=1&"),
        # a value holding '=' is masked whole
        ("https://h.test/x.tar?sig=zq9==&v=1", "https://h.test/x.tar?sig=***&v=1"),
        # percent-encoded and form-encoded names are compared decoded
        (
            "https://h.test/x.tar?X%2DAmz%2DSignature=zq9&%73ig=zq9&api%5Fkey=zq9",
            "https://h.test/x.tar?X%2DAmz%2DSignature=***&%73ig=***&api%5Fkey=***",
        ),
        ("https://h.test/x.tar?Api+Key=zq9", "https://h.test/x.tar?Api+Key=***"),
        ("https://h.test/x.tar?%20sig%09=zq9", "https://h.test/x.tar?%20sig%09=***"),
        # ';' separates too, and '&amp;' pasted from HTML
        ("https://h.test/x.tar?v=1;sig=zq9", "https://h.test/x.tar?v=1;sig=***"),
        ("https://h.test/x.tar?v=1&amp;sig=zq9", "https://h.test/x.tar?v=1&amp;sig=***"),
        # a fragment in the form of a query (OAuth's implicit grant)
        (
            "https://h.test/x.tar?v=1#access_token=zq9&state=s",
            "https://h.test/x.tar?v=1#access_token=***&state=s",
        ),
        # only names decide: a value that looks like a credential's name is kept
        ("https://h.test/x.tar?name=signature", "https://h.test/x.tar?name=signature"),
        (
            "https://h.test/x.tar?response-content-disposition=attachment%3B%20filename%3Dx.tar",
            "https://h.test/x.tar?response-content-disposition=attachment%3B%20filename%3Dx.tar",
        ),
        # together with user information, which is masked as before
        (
            "https://reader:zq9-pass@h.test/x.tar?versionId=v1&sig=zq9",
            "https://reader:***@h.test/x.tar?versionId=v1&sig=***",
        ),
        ("s3://runs/v5/x.tar?versionId=v1&token=zq9", "s3://runs/v5/x.tar?versionId=v1&token=***"),
        # a URL that does not split (an unclosed IPv6 bracket)
        (
            "http://zq9-user:zq9-pass@[::1/x.tar?X-Amz-Signature=zq9&versionId=v1",
            "http://***@[::1/x.tar?X-Amz-Signature=***&versionId=v1",
        ),
        ("http://[::1/x.tar?sig=zq9#token=zq9", "http://[::1/x.tar?sig=***#token=***"),
        # no credential: byte for byte as given
        (
            "https://h.test/v5/x.tar?versionId=v1&X-Amz-Date=20261202T000000Z#part",
            "https://h.test/v5/x.tar?versionId=v1&X-Amz-Date=20261202T000000Z#part",
        ),
    ],
)
def test_a_query_is_shown_with_its_credentials_masked(url: str, shown: str) -> None:
    assert shown_url(url) == shown
    assert "zq9" not in shown


@settings(max_examples=2000, deadline=None, derandomize=True)
@given(st.text())
def test_shown_url_is_total(text: str) -> None:
    """Any string, a URL or not: named, never an exception."""
    assert isinstance(shown_url(text), str)
    assert isinstance(shown_url("https://h.test/x.tar?" + text), str)
    assert isinstance(shown_url("http://[::1/x.tar?" + text), str)


_VALUE = st.text(st.characters(blacklist_characters="&;#@"), min_size=1)
"""A parameter's value: no separator, and no "@" (a URL with user information inside a value
is masked as such)."""


@settings(max_examples=1000, deadline=None, derandomize=True)
@given(
    st.sampled_from(["https://h.test/x.tar", "http://u:p@[::1/x.tar", "s3://b/k.tar"]),
    st.lists(st.tuples(st.sampled_from(["versionId", "X-Amz-Date", "part"]), _VALUE)),
    st.sampled_from([*sorted(URL_CREDENTIAL_PARAMETERS), "token", "API_KEY"]),
    _VALUE.map(lambda value: "zq9" + value),
)
def test_a_credential_value_never_shows(
    base: str, others: list[tuple[str, str]], name: str, secret: str
) -> None:
    """Whatever the value and the parameters around it, the credential's value is not shown,
    and the other parameters are, in order."""
    before = [f"{key}={value}" for key, value in others]
    url = f"{base}?{'&'.join([*before, f'{name}={secret}', *before])}"
    shown = shown_url(url)
    assert shown.endswith("?" + "&".join([*before, f"{name}=***", *before]))


def test_two_sources_shown_alike_are_one_judged_and_the_other_refused() -> None:
    """Two URLs that differ only by a credential (one object signed twice, or two objects a
    token tells apart) would be named alike in every report: the first by :func:`sort_key` is
    judged, whatever order they are given in, and the other refused, said (never dropped
    unsaid); one given twice is one source; another version (versionId) is another source."""
    base = "https://runs.example.org/v5/run-a.tar?versionId=v1&X-Amz-Date=20261202T000000Z"
    first, second = f"{base}&X-Amz-Signature=zq9-first", f"{base}&X-Amz-Signature=zq9-second"
    other = first.replace("versionId=v1", "versionId=v2")
    twin = [(shown_url(second), MASKED_TWIN)]
    for sources in ([first, second], [second, first], [second, first, second]):
        kept, refused = ordered(sources)
        assert kept == [first]
        assert [(r.source, r.data.decode()) for r in refused] == twin
    assert ordered([first, other, first]) == ([first, other], [])
    with walked([second, other, first, first]) as walk:  # the walk of rank and rejudge
        steps = [(index, twin) for index, _, twin in walk]
    assert [index for index, twin in steps if not twin] == [2, 3, 1]
    assert [index for index, twin in steps if twin] == [0]


# --- the archive reports, from a real HTTP server -------------------------------------------

SIGNATURE = "SECRETVALUE"
QUERY = (
    "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDSECRETVALUE%2F20261202%2Faws4_request"
    "&X-Amz-Date=20261202T000000Z&X-Amz-Expires=3600&versionId=v-one"
    "&X-Amz-Signature=SECRETVALUE"
)
KEPT = (
    "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=***&X-Amz-Date=20261202T000000Z"
    "&X-Amz-Expires=3600&versionId=v-one&X-Amz-Signature=***"
)


@pytest.fixture(scope="module")
def presigned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RangeServer]:
    """A tar served on 127.0.0.1 (the server ignores the query, as a test of the reader's
    side: what is shown of a URL)."""
    root = tmp_path_factory.mktemp("presigned")
    bundle = tmp_path_factory.mktemp("bundle") / "run-a"
    write_small_bundle(bundle, durable=False)
    pack(bundle, root / "run-a.tar")
    with serve(root) as server:
        yield server


def _urls(server: RangeServer) -> tuple[str, str, str]:
    """The tar, the same tar signed again (another signature), a tar that is not there."""
    return (
        f"{server.url}/run-a.tar?{QUERY}",
        f"{server.url}/run-a.tar?{QUERY.replace('=SECRETVALUE', '=SECRETVALUE2')}",
        f"{server.url}/missing.tar?{QUERY}",
    )


@pytest.mark.parametrize(
    ("command", "named", "twin"),
    [
        (["verify-archive", "--json"], 1, 1),
        (["verify-archive", "--markdown"], 1, 1),
        (["verify-archive", "--csv"], 1, 1),
        (["rank", "--json"], 1, 1),  # refusals on stderr
        (["rank", "--markdown"], 0, 2),  # a bundle of one source is named by its digest
        (["rank", "--csv"], 1, 2),
        (["rejudge", "--pins", "gx10-reference-v5", "--json"], 0, 2),  # only what changed
        (["rejudge", "--pins", "gx10-reference-v5", "--markdown"], 0, 2),
    ],
)
def test_archive_reports_never_show_a_signature(
    presigned: RangeServer,
    command: list[str],
    named: int,
    twin: int,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    """Every output and refusal line names the sources with their signatures masked and the
    rest of the query (versionId, the date) kept; of the tar and its second signing, shown
    alike, the first is judged, named where the output names sources, and the other refused
    (said ``twin`` times, as each output says a refusal); the missing tar is refused, named the
    same way."""
    found, again, missing = _urls(presigned)
    code = main([*command, found, again, missing])
    captured = capsysbinary.readouterr()
    assert code == 1, captured
    both = captured.out + captured.err
    assert SIGNATURE.encode() not in both
    assert both.count(MASKED_TWIN.encode()) == twin
    assert both.count(f"/run-a.tar?{KEPT}".encode()) == named + twin
    assert f"{presigned.url}/missing.tar?{KEPT}".encode() in both
    assert both.count(b"/run-a.tar?") == named + twin


def test_verify_archive_json_through_a_subprocess(presigned: RangeServer, tmp_path: Path) -> None:
    """The entry point as an operator runs it, sources on the command line and in a list file:
    the report (and anything on stderr) holds no signature; it lists the tar once, with the
    query's other parameters, and refuses the missing one and the tar's second signing."""
    found, again, missing = _urls(presigned)
    listed = tmp_path / "bundles.txt"
    listed.write_text(f"# presigned\n{again}\n{missing}\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "audit", "verify-archive", "--json", found, "--from", str(listed)],
        capture_output=True,
        env=os.environ | {"PYTHONPATH": str(Path(__file__).parents[2])},
        check=False,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr
    assert SIGNATURE.encode() not in done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert [entry["sources"] for entry in report["bundles"]] == [
        [f"{presigned.url}/run-a.tar?{KEPT}"]
    ]
    assert report["refused"] == [
        {
            "reason": "cannot open: not found (HTTP 404)",
            "source": f"{presigned.url}/missing.tar?{KEPT}",
        },
        {"reason": MASKED_TWIN, "source": f"{presigned.url}/run-a.tar?{KEPT}"},
    ]


# --- a library's message, and a server that answers what no client takes ------------------------


def test_a_url_within_a_message_is_shown_masked() -> None:
    text = (
        "an invalid response: ClientResponseError: 400, message='Invalid header', "
        "url='https://h.test/a.tar?versionId=v1&X-Amz-Signature=SECRET'; and s3://b/k?token=T2: "
        "a path that held one, https:/h.test/x?sig=S3. reference://sparkbench@53da0fcee8b3 stays"
    )
    assert masked_text(text) == (
        "an invalid response: ClientResponseError: 400, message='Invalid header', "
        "url='https://h.test/a.tar?versionId=v1&X-Amz-Signature=***'; and s3://b/k?token=***: "
        "a path that held one, https:/h.test/x?sig=***. reference://sparkbench@53da0fcee8b3 stays"
    )
    assert masked_text("no URL: nothing to mask") == "no URL: nothing to mask"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # urlsplit drops tabs and line breaks: the password is "secret"
        ("x/https://u:se\tcret@h/x: no such bundle", "x/https://***@h/x: no such bundle"),
        ("https://u:se\r\ncret@h/x", "https://***@h/x"),
        ("https://h.test/a?sig=ab\tcd end", "https://h.test/a?sig=*** end"),
        # the user information runs to the authority's last "@", as urlsplit reads it
        ("https://a@b@host/x", "https://***@host/x"),
        ("https://a@b@host/x\tthen", "https://***@host/x\tthen"),
        # a line break between a URL and the next words is kept, and so are they
        ("https://h/x\nnext line", "https://h/x\nnext line"),
        ("https://u:p@h/x\nnext line", "https://***@h/x\nnext line"),
        ("https://host/a@b", "https://host/a@b"),
    ],
)
def test_a_credential_split_by_what_url_parsers_drop_is_masked(text: str, shown: str) -> None:
    assert masked_text(text) == shown


class _Answering(socketserver.BaseRequestHandler):
    """Answers every request with the server's ``answer`` bytes, then closes."""

    def handle(self) -> None:
        self.request.recv(65536)
        self.request.sendall(self.server.answer)  # type: ignore[attr-defined]


@contextlib.contextmanager
def _answering_server(answer: bytes) -> Iterator[str]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Answering)
    server.answer = answer  # type: ignore[attr-defined]
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


MALFORMED = b"HTTP/1.1 206 Partial Content\r\nthis is not a header\r\nContent-Length: 0\r\n\r\n"
NOT_A_URL = b"HTTP/1.1 302 Found\r\nLocation: http://[::1/x\r\nContent-Length: 0\r\n\r\n"


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (MALFORMED, "an invalid response: ClientResponseError"),  # aiohttp names the URL
        (NOT_A_URL, "a redirect (HTTP 302) whose Location is not a URL"),  # was a traceback
    ],
)
def test_a_server_that_answers_what_no_client_takes_is_one_refused_source(
    answer: bytes,
    said: str,
    presigned: RangeServer,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    with _answering_server(answer) as base:
        hostile = f"{base}/b.tar?X-Amz-Signature={SIGNATURE}&sig={SIGNATURE}"
        assert main(["verify", hostile]) == 2
        captured = capsysbinary.readouterr()
        assert SIGNATURE.encode() not in captured.out + captured.err
        assert said.encode() in captured.err and b"Traceback" not in captured.err
        found = _urls(presigned)[0]
        for command in (["verify-archive", "--json"], ["rank", "--json"]):
            assert main([*command, hostile, found]) == 1
            captured = capsysbinary.readouterr()
            both = captured.out + captured.err
            assert SIGNATURE.encode() not in both
            assert said.encode() in both
            assert b"run-a.tar" in captured.out  # the other source is still judged
