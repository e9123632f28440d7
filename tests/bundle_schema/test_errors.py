"""How text a publisher chose is written out where a reviewer reads it
(``bundle_schema.errors``): every control character, every bidirectional or invisible format
character, in one table the text views, the page and the messages share."""

from __future__ import annotations

import sys
import unicodedata

import pytest

from bundle_schema.errors import FORMATS_WRITTEN_OUT, SHOWN_WRITTEN_OUT, one_line, written_out


def test_every_format_character_is_written_out() -> None:
    """Every code point of general category Cf in this Python's Unicode data."""
    formats = [c for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"]
    assert len(formats) > 150
    assert [hex(c) for c in formats if c not in FORMATS_WRITTEN_OUT] == []


@pytest.mark.parametrize(
    "code", [0x034F, 0x115F, 0x3164, 0xFFA0, 0x17B4, 0x180B, 0xFE0F, 0xE0100, 0x2065, 0xE0000]
)
def test_default_ignorables_that_are_no_format_characters_are_written_out(code: int) -> None:
    """Variation selectors, the Hangul fillers, the combining grapheme joiner: shown as
    nothing, though not Cf."""
    name = "reference-model-q8_0" + chr(code)
    for shown in (written_out(name), one_line(name), name.translate(SHOWN_WRITTEN_OUT)):
        assert shown.isascii()
        assert shown == "reference-model-q8_0" + (
            f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
        )


def test_text_is_kept_as_it_is_otherwise() -> None:
    text = "caf\u00e9 \u6a21\u578b \U0001f600\tline\nnext"
    assert text.translate(SHOWN_WRITTEN_OUT) == text  # tab and line feed kept where lines are
    assert written_out(text) == "caf\u00e9 \u6a21\u578b \U0001f600\\x09line\\x0anext"
