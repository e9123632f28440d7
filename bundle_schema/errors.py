"""The project's exception tree, rooted here so that every layer shares it.

    EvidenceAuditError           base; carries the exit code the CLI returns
    ├── InvalidInput             exit 2: refused request: usage, a path that cannot be read or
    │   │                        holds no bundle, an input file the user gave that is malformed,
    │   │                        a format version or pin set this code does not know
    │   ├── DocumentError        a JSON document that is not a valid document of its kind
    │   │   ├── MalformedJSON    not strict JSON: bad UTF-8, duplicate keys, NaN, trailing data
    │   │   ├── NotCanonical     valid JSON whose bytes are not its RFC 8785 canonical form
    │   │   ├── UnknownSchemaVersion
    │   │   └── SchemaViolation  fails the committed JSON Schema or the model
    │   ├── ShardRefused         verify.scorers.bfcl: BFCL shards the scorer refuses
    │   ├── LmspeedRefused       verify.scorers.lmspeed: an LMSpeed input it refuses
    │   ├── QualityRefused       verify.scorers.quality: a quality input it refuses
    │   ├── EnvironmentUnavailable  audit.environments: a harness interpreter that cannot be asked
    │   ├── SandboxUnavailable   audit.sandbox: no network namespace (or a tool it needs) here
    │   ├── _Unwritten           audit.run: the bundle could not be written (evidence kept)
    │   ├── _Changed             verify._remote: a response to a range request that is not the
    │   │                        range, or not of the object first read (a tar at a URL)
    │   ├── ChangedWhileRead     verify._source: a blob read to be judged that is not the bytes
    │   │                        hashed (ADR 0053: the bundle changed while it was verified)
    │   ├── _Retry               verify._remote: a request that failed in a way worth another
    │   │                        try (a connection, a time-out, a server error)
    │   ├── BadRequest           audit._http_server: a harness's request the observer does not
    │   │                        take; answered with its 4xx/5xx status, never recorded
    │   ├── Refused              verify.judging: a source refused where the work was done (a
    │   │                        Dask task), its reason said; caught by the archive's walk
    │   └── _RefusedError        bundle_schema.canonical: inside the JSON parser (a ValueError
    │                            too, for the parser's hooks); becomes
    │                            MalformedJSON before it leaves the module
    └── CheckFailed              exit 1: the input was read, and a check on it failed
        ├── DefectiveBundle      a bundle whose own bytes are unsound
        │   ├── HostileArchive   verify._source: a tar or directory a bundle never is
        │   ├── TraceError       verify.socket_trace: a raw connect() trace that does not parse
        │   └── _RecordShapeError  verify._shell: a record blob that is not one or more lines
        ├── OutputsUnreadable    verify.harness_outputs: a harness's outputs that are not evidence
        ├── _NotRead             verify._consistency.benchlocal_grades: a reply a replayed
        │                        grader cannot read as it must (the grader fails it)
        ├── ParseFailed          audit.parsers: the same, as the runner meets it
        ├── CheckoutFailed       audit.checkouts: an upstream not checked out at its pinned commit
        ├── SignatureFailed      verify._signature: a signature that does not verify
        └── SigningFailed        audit.signing: Fulcio or Rekor refused, or could not be reached

Every exception class of the project is in this tree (tests/bundle_schema/test_exception_tree.py
holds it to that); the runner and the verifier catch most of the lower ones where they turn into
a failed component, a finding or a signature status, and the CLI turns any that escapes into one
line and its exit code, never a traceback.

The rule (ADR 0019): a defect of a bundle's bytes is a failed check (exit 1), wherever it is
found, so that "this bundle is not sound" always reads the same; a refusal (exit 2) means nothing
was judged because the request itself cannot be carried out.

Every message names what was wrong and where, on one line.
"""

from __future__ import annotations

import re

__all__ = [
    "CONTROL_CODES",
    "ERROR_LINE",
    "EXIT_CHECK_FAILED",
    "EXIT_INVALID_INPUT",
    "EXIT_OK",
    "CheckFailed",
    "DefectiveBundle",
    "DocumentError",
    "EvidenceAuditError",
    "InvalidInput",
    "MalformedJSON",
    "NotCanonical",
    "SchemaViolation",
    "UnknownSchemaVersion",
]

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_INVALID_INPUT = 2


_SURROGATE = re.compile("[\ud800-\udfff]")


def printable(text: str) -> str:
    """``text`` with every lone surrogate written out, so that it can be encoded as UTF-8 (a
    report, a message): one that stands for a byte a file name holds that is not UTF-8 (as
    Python decodes such names, ``surrogateescape``) as ``\\xff``, any other as ``\\udc00``."""

    def escaped(match: re.Match[str]) -> str:
        code = ord(match.group())
        return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"

    return _SURROGATE.sub(escaped, text)


CONTROL_CODES = (*range(0x20), 0x7F, *range(0x80, 0xA0))
"""The C0 and C1 control characters and DEL: a terminal acts on them (ESC starts a sequence
that can retitle or clear it, BEL rings), so text a publisher chose never reaches one raw."""
BIDI_CODES = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
"""The bidirectional formatting characters (the marks, embeddings, overrides and isolates): a
terminal or an editor that shows them lays out the text around them right to left, so that a
name a publisher chose (``m\\u202e...``) could show a table row's scores reversed."""
INVISIBLE_CODES = (
    # Unicode's default-ignorable code points (DerivedCoreProperties.txt): shown as nothing
    0x00AD, 0x034F, 0x061C, 0x115F, 0x1160, 0x17B4, 0x17B5, *range(0x180B, 0x1810),
    *range(0x200B, 0x2010), *range(0x202A, 0x202F), *range(0x2060, 0x2070), 0x3164,
    *range(0xFE00, 0xFE10), 0xFEFF, 0xFFA0, *range(0xFFF0, 0xFFF9), *range(0x1BCA0, 0x1BCA4),
    *range(0x1D173, 0x1D17B), *range(0xE0000, 0xE1000),
    # the other format characters (general category Cf): signs and controls of a script's own
    *range(0x0600, 0x0606), 0x06DD, 0x070F, 0x0890, 0x0891, 0x08E2, 0x110BD, 0x110CD,
    *range(0x13430, 0x13440), *range(0xFFF9, 0xFFFC),
    # the line and paragraph separators: a line break where "\\n" is kept
    0x2028, 0x2029,
)  # fmt: skip
"""The other characters a terminal, an editor or a browser shows as nothing, or that act on the
text around them: ``m\\u200b`` or ``m\\ufe0f`` shown raw reads as ``m``, the very name it
differs from. Every format character (``Cf``) is one (``tests/bundle_schema/test_errors.py``
holds the list to this Python's Unicode data)."""
FORMATS_WRITTEN_OUT = {
    code: f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
    for code in (*BIDI_CODES, *INVISIBLE_CODES)
}
"""Each bidirectional formatting character and each invisible one as ``\\u202e``."""
SHOWN_WRITTEN_OUT = {
    code: f"\\x{code:02x}" for code in CONTROL_CODES if code not in (0x09, 0x0A)
} | FORMATS_WRITTEN_OUT
"""What text a publisher chose is shown with where its lines are kept (a body, a page): every
control character but tab and line feed as ``\\x1b``, every format character as ``\\u202e``."""
_WRITTEN_OUT = {code: f"\\x{code:02x}" for code in CONTROL_CODES} | FORMATS_WRITTEN_OUT


def written_out(text: str) -> str:
    """``text`` on one line as it is: every control character (tab and line feed included)
    written out as ``\\x0a``, every bidirectional or invisible format character as
    ``\\u200b``: a recorded header value that holds a line break shows it, never a line more."""
    return text.translate(_WRITTEN_OUT)


def clip(text: str, limit: int) -> str:
    """``text``, or its first ``limit`` characters ending in ``...`` (a bound a message or a
    report's schema sets), nothing else changed."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def one_line(text: str, limit: int = 1000) -> str:
    """Collapse whitespace so that a message stays on one line, and bound its length (long
    enough for the few whole paths a message names: a run that could not write its bundle
    names the bundle, the file that failed and where its evidence is kept); a name that is
    not UTF-8 is written out (:func:`printable`), and so is any other control character (ESC,
    BEL, a C1 code: ``\\x1b``) and any bidirectional or invisible format character
    (``\\u202e``, ``\\u200b``)."""
    return clip(" ".join(printable(text).split()).translate(_WRITTEN_OUT), limit)


ERROR_LINE = 4 * 4096 + 1000
"""How long a command's error line may be: two paths as long as the kernel takes (4,096
bytes), each byte that is not UTF-8 written out as four characters (``\\xff``), and the
reason."""


class EvidenceAuditError(Exception):
    """Base of every error this project raises on purpose. Its text (``str``) is one line of
    at most 1,000 characters, as reports and verdicts quote it; :attr:`message` is the message
    as given, for the command's error line (credentials in URLs masked, then folded onto one
    line of at most :data:`ERROR_LINE`)."""

    exit_code: int = EXIT_INVALID_INPUT

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))
        self.message = message
        """The message as given, tabs and line breaks kept: a URL's credentials are masked
        before the message is folded (a tab inside a URL's password is dropped by URL parsers;
        folded to a space first, it would end the URL before the password's rest)."""


class InvalidInput(EvidenceAuditError):
    """Input was refused: unreadable, malformed, schema-invalid, hostile, or a usage error."""

    exit_code = EXIT_INVALID_INPUT


class CheckFailed(EvidenceAuditError):
    """The input was read, and a check on it failed."""

    exit_code = EXIT_CHECK_FAILED


class DefectiveBundle(CheckFailed):
    """A bundle's own bytes are unsound: a hostile archive, or a manifest that is not one."""


class DocumentError(InvalidInput):
    """A JSON document is not a valid document of its kind.

    Args:
        where: the document's location, e.g. ``manifest.json`` or ``transport/exchanges.jsonl:3``.
        detail: what is wrong, ideally with a JSON path inside the document.
    """

    def __init__(self, where: str, detail: str) -> None:
        self.where = where
        self.detail = detail
        super().__init__(f"{where}: {detail}")


class MalformedJSON(DocumentError):
    """Not strict JSON."""


class NotCanonical(DocumentError):
    """Valid JSON whose bytes are not the RFC 8785 canonical form of its value."""


class UnknownSchemaVersion(DocumentError):
    """A ``schema_version`` this code does not read."""


class SchemaViolation(DocumentError):
    """The document fails its JSON Schema or its model."""
