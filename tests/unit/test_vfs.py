import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.vfs.entries import (
    PathError,
    Workspace,
    file_entry,
    merge_files,
    summarize_files,
    validate_path,
)
from tests.tiers import examples


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("../etc/passwd", "climbs out"),
        ("a/../../b", "climbs out"),
        ("/etc/passwd", "absolute"),
        ("C:evil", "absolute"),
        ("a\\b", "backslash"),
        ("a\x00b", "NUL"),
        ("x" * 201, "limit"),
        ("", "non-empty"),
        ("   ", "non-empty"),
        ("a/\x07b", "control"),
        (".", "does not name a file"),
    ],
)
def test_hostile_paths_are_rejected_with_a_reason(path, why):
    with pytest.raises(PathError, match=why):
        validate_path(path)


def test_paths_are_normalised():
    assert validate_path("a/./b.md") == "a/b.md"


def test_file_entry_size_and_hash_follow_content():
    entry = file_entry("héllo", step=3, status="done", step_id="S1")
    assert entry["bytes"] == 6
    assert len(entry["sha256"]) == 64
    assert entry["written_at_step"] == 3


def test_merge_files_overwrites_and_deletes_and_is_batching_invariant():
    a, b = file_entry("a", step=1), file_entry("b", step=2)
    writes = [{"x": a}, {"y": b}, {"x": None}]
    together = merge_files({}, writes)
    apart = merge_files(merge_files({}, writes[:1]), writes[1:])
    assert together == apart == {"y": b}


def test_summaries_never_carry_content():
    secret = "SECRET-CONTENT " * 1000
    files = {
        "r.md": file_entry(
            secret,
            step=1,
            status="failed",
            check={"kind": "regex", "passed": False, "score": 0.0, "evidence": "pattern not found"},
        )
    }
    summary = summarize_files(files, step=4)
    assert summary["r.md"]["status"] == "failed"
    assert summary["r.md"]["bytes"] == len(secret)
    assert summary["r.md"]["age_steps"] == 3
    assert summary["r.md"]["check"] == "fail"
    assert "SECRET" not in repr(summary)


def test_workspace_writes_only_its_scope():
    ws = Workspace({"dep.md": "x"}, writable=["out.md"], scratch="work/S1/")
    ws.write("out.md", "ok")
    ws.write("work/S1/notes.txt", "scratch")
    with pytest.raises(PathError, match="permission_denied"):
        ws.write("dep.md", "overwrite a dependency")
    with pytest.raises(PathError, match="permission_denied"):
        ws.write("work/S2/x", "another step's scratch")
    assert ws.written == {"out.md": "ok", "work/S1/notes.txt": "scratch"}


def test_workspace_edit_needs_one_exact_match():
    ws = Workspace({"out.md": "a a b"}, writable=["out.md"])
    with pytest.raises(PathError, match="found 2 times"):
        ws.edit("out.md", "a", "c")
    with pytest.raises(PathError, match="not found"):
        ws.edit("out.md", "zzz", "c")
    ws.edit("out.md", "b", "c")
    assert ws.read("out.md") == "a a c"


def test_workspace_limits_size_and_count():
    ws = Workspace({}, writable=["a", "b"], max_file_bytes=10, max_files=1)
    with pytest.raises(PathError, match="limit is 10"):
        ws.write("a", "x" * 11)
    ws.write("a", "x")
    with pytest.raises(PathError, match="too many files"):
        ws.write("b", "y")


# ----------------------------------------------------- names: one spelling, no look-alikes

NFD_CAFE, NFC_CAFE = "cafe\u0301.md", "caf\u00e9.md"

CONFUSABLE_NAMES = {
    # letters of another script inside a Latin word (and the reverse)
    "cyrillic a": ("slug\u0430fy.py", "Cyrillic and Latin"),
    "cyrillic i": ("slug\u0456fy.py", "Cyrillic and Latin"),
    "cyrillic es, o, er": ("\u0441\u043e\u0440y.py", "Cyrillic and Latin"),
    "greek omicron": ("rep\u03bfrt.md", "Greek and Latin"),
    "cyrillic in a folder": ("src/\u0430pp/main.py", "Cyrillic and Latin"),
    "latin in a cyrillic word": ("\u043e\u0442\u0447e\u0442.md", "Cyrillic and Latin"),
    "armenian": ("scr\u0585pt.py", "Armenian and Latin"),
    # a whole word of another script that reads exactly like ASCII
    "cyrillic lookalike word": ("\u0441\u043e\u0440.py", "reads as ASCII 'cop'"),
    "cyrillic extension": ("slugify.\u0440\u0443", "reads as ASCII 'py'"),
    "greek lookalike word": ("\u03bd\u03b1\u03b9.txt", "reads as ASCII 'vai'"),
    "dotless i": ("\u0131ndex.html", "reads as ASCII 'index'"),
    "unicode hyphen": ("my\u2010file.md", "reads as ASCII '-'"),
    "fraction slash": ("a\u2044b.md", "reads as ASCII '/'"),
    # compatibility forms that fold to other letters
    "fullwidth": ("\uff53\uff4c\uff55\uff47\uff49\uff46\uff59.py", "compatibility form"),
    "fullwidth dot": ("slugify\uff0epy", "compatibility form"),
    "ligature": ("\ufb01le.md", "compatibility form"),
    "math bold": ("\U0001d42c\U0001d425\U0001d42e\U0001d420.py", "compatibility form"),
    "superscript": ("x\u00b2.py", "compatibility form"),
    "circled": ("\u24d0.md", "compatibility form"),
    "dot leaders climbing out": ("\u2024\u2024/etc/passwd", "compatibility form"),
    "fullwidth dots": ("\uff0e\uff0e/x.md", "compatibility form"),
    # invisible and bidi controls
    "rtl override": ("evil\u202eyp.txt", "invisible"),
    "rtl override in a folder": ("work/S1/\u202egnp.exe", "invisible"),
    "ltr embedding": ("a\u202ab.md", "invisible"),
    "pop directional": ("a\u202cb.md", "invisible"),
    "rtl isolate": ("a\u2067b.md", "invisible"),
    "pop isolate": ("a\u2069b.md", "invisible"),
    "zero width space": ("slug\u200bify.py", "invisible"),
    "zero width joiner": ("slug\u200dify.py", "invisible"),
    "zero width non-joiner": ("slug\u200cify.py", "invisible"),
    "lrm": ("a\u200e.md", "invisible"),
    "rlm": ("a\u200f.md", "invisible"),
    "word joiner": ("a\u2060b.md", "invisible"),
    "bom": ("\ufeffslugify.py", "invisible"),
    "soft hyphen": ("slug\u00adify.py", "invisible"),
    "grapheme joiner": ("a\u034fb.md", "invisible"),
    "hangul filler": ("\u3164.py", "invisible"),
    "variation selector": ("a\ufe0f.md", "invisible"),
    "mongolian vowel separator": ("a\u180eb.md", "invisible"),
    "tag character": ("a\U000e0041.md", "invisible"),
    # other characters that do not print as themselves
    "no-break space": ("a\u00a0b.md", "non-printing"),
    "ideographic space": ("a\u3000b.md", "non-printing"),
    "line separator": ("a\u2028b.md", "non-printing"),
    "escape": ("a\x1b[31m.md", "control"),
    "private use": ("a\ue000.md", "non-printing"),
    "leading space": ("work/S1/ notes.md", "space"),
    "trailing space": ("notes.md ", "space"),
    # digits of two number systems in one word
    "arabic digit": ("file\u0663.txt", "Arabic and Latin"),
    "arabic and devanagari digits": ("\u0968\u0966\u0968\u096a\u0669.txt", "Arabic and Devanagari"),
    "ascii and devanagari digits": ("\u0968\u096624.txt", "number systems"),
}


@pytest.mark.parametrize("name", list(CONFUSABLE_NAMES))
def test_confusable_names_are_refused_with_the_reason(name):
    path, why = CONFUSABLE_NAMES[name]
    with pytest.raises(PathError, match=re.escape(why)) as refused:
        validate_path(path)
    message = str(refused.value)
    assert message.isprintable(), message  # the refusal itself hides nothing


@pytest.mark.parametrize(
    ("path", "plain"),
    [
        ("slug\u0456fy.py", "slugify.py"),
        ("\uff53\uff4c\uff55\uff47\uff49\uff46\uff59.py", "slugify.py"),
        ("evil\u202eyp.txt", "evilyp.txt"),
        ("slugify.\u0440\u0443", "slugify.py"),
        ("src/\u0430pp/main.py", "src/app/main.py"),
        ("slug\u200bify.py", "slugify.py"),
    ],
)
def test_a_refusal_suggests_the_plain_ascii_name(path, plain):
    with pytest.raises(PathError, match=re.escape(f"use the plain name {plain!r}")):
        validate_path(path)


@pytest.mark.parametrize(
    "path",
    [
        NFC_CAFE,
        "na\u00efve.md",
        "Stra\u00dfe.md",
        "\u043e\u0442\u0447\u0451\u0442.md",  # Cyrillic word, Latin extension
        "\u043e\u0442\u0447\u0451\u0442_final.md",
        "\u03bb\u03cc\u03b3\u03bf\u03c2.txt",
        "\u65e5\u672c\u8a9e\u306e\u30d5\u30a1\u30a4\u30eb.md",  # Han, Hiragana, Katakana
        "\u65e5\u672creport.md",  # Han with Latin, as Japanese file names are
        "\ud55c\uad6d\uc5b4 \ubcf4\uace0\uc11c.md",
        "\u0627\u0644\u062a\u0642\u0631\u064a\u0631.md",
        "docs/r\u00e9sum\u00e9 2024.md",
        "\u0968\u0966\u0968\u096a.txt",  # Devanagari digits alone
    ],
)
def test_names_in_one_script_are_fine(path):
    assert validate_path(path) == path


def test_nfd_and_nfc_spellings_are_one_path():
    assert NFC_CAFE != NFD_CAFE
    assert validate_path(NFD_CAFE) == validate_path(NFC_CAFE) == NFC_CAFE
    assert validate_path("docs/" + NFD_CAFE) == "docs/" + NFC_CAFE
    assert validate_path("\u2126.md") == "\u03a9.md"  # a canonical singleton: OHM SIGN is Omega


@pytest.mark.parametrize(("written", "looked_up"), [(NFD_CAFE, NFC_CAFE), (NFC_CAFE, NFD_CAFE)])
def test_the_workspace_keeps_one_file_for_both_spellings(written, looked_up):
    ws = Workspace({}, writable=[written])
    ws.write(written, "one")
    ws.write(looked_up, "two")  # the same file, within the write scope under either spelling
    assert ws.read(looked_up) == ws.read(written) == "two"
    ws.edit(looked_up, "two", "three")
    assert ws.contents() == {NFC_CAFE: "three"} and ws.ls() == [NFC_CAFE]
    assert list(ws.written) == [NFC_CAFE]


def test_inputs_given_in_nfd_are_read_under_either_spelling():
    ws = Workspace({NFD_CAFE: "input"}, writable=["out.md"])
    assert ws.read(NFC_CAFE) == ws.read(NFD_CAFE) == "input"
    assert ws.ls() == [NFC_CAFE]


def test_merged_files_and_their_summaries_have_one_entry_per_name():
    merged = merge_files(
        {}, [{NFD_CAFE: file_entry("a", step=1)}, {NFC_CAFE: file_entry("b", step=2)}]
    )
    assert list(merged) == [NFC_CAFE] and merged[NFC_CAFE]["content"] == "b"
    assert list(summarize_files(merged, 3)) == [NFC_CAFE]
    assert merge_files(merged, [{NFD_CAFE: None}]) == {}  # deleting by the other spelling


@pytest.mark.parametrize(
    ("existing", "new"),
    [
        ("slugify.py", "Slugify.py"),
        ("slugify.py", "SLUGIFY.PY"),
        ("docs/Report.md", "docs/report.md"),
        ("docs/report.md", "Docs/report.md"),
        ("Stra\u00dfe.md", "STRASSE.md"),  # casefold: ß is ss
        (NFC_CAFE, "CAF\u00c9.md"),
    ],
)
def test_a_name_differing_from_an_existing_file_only_by_case_is_refused(existing, new):
    ws = Workspace({existing: "x"}, writable=[new])
    with pytest.raises(PathError, match="only by letter case") as refused:
        ws.write(new, "y")
    assert repr(existing) in str(refused.value)  # names the file it would be mistaken for
    assert ws.written == {} and ws.contents() == {existing: "x"}


def test_rewriting_the_same_file_is_not_a_collision():
    ws = Workspace({"slugify.py": "x"}, writable=["slugify.py"])
    ws.write("slugify.py", "y")
    assert ws.contents() == {"slugify.py": "y"}


@settings(max_examples=examples(400), deadline=None)
@given(path=st.text(min_size=1, max_size=60))
def test_any_path_is_refused_with_a_path_error_or_stored_in_one_stable_spelling(path):
    try:
        stored = validate_path(path)
    except PathError as exc:
        assert str(exc).isprintable()
        return
    assert unicodedata.is_normalized("NFC", stored) and validate_path(stored) == stored
    assert stored.isprintable() and validate_path(unicodedata.normalize("NFD", path)) == stored


@settings(max_examples=examples(200), deadline=None)
@given(
    names=st.lists(
        st.sampled_from(
            ["a.md", "A.md", "caf\u00e9.md", "cafe\u0301.md", "CAF\u00c9.md", "b.md", "\uff41.md"]
        ),
        max_size=8,
    )
)
def test_a_workspace_never_holds_two_names_a_reader_would_confuse(names):
    ws = Workspace({}, writable=names)
    for name in names:
        try:
            ws.write(name, "x")
        except PathError:
            pass
    folded = [n.casefold() for n in ws.ls()]
    assert len(folded) == len(set(folded))
