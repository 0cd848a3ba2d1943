"""The ``citations`` check kind: URL extraction, what counts as the same source, verdicts."""

from __future__ import annotations

import pytest

from agent.checks import run_check, validate_check_spec
from agent.checks.citations import cited_urls, extract_urls, normalise_url

RETURNED = (
    "[1] https://a.com/x\nMercury is the closest planet.\n\n"
    "[2] https://b.org/papers/2024?id=7\nVenus is hot.\n\n"
    "[3] https://en.wikipedia.org/wiki/Mercury_(planet)\nThe planet."
)


def cite(artifact: str, *outputs: str, spec: dict | None = None, path: str = "notes.md"):
    return run_check(
        spec or {"kind": "citations"},
        {path: artifact},
        path,
        tool_outputs=outputs or (RETURNED,),
    )


# -- extraction ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "urls"),
    [
        ("see [Mercury](https://a.com/x).", ["https://a.com/x"]),
        ("[https://a.com/x](https://a.com/x)", ["https://a.com/x", "https://a.com/x"]),
        ("(source: https://a.com/x)", ["https://a.com/x"]),
        ("<https://a.com/x>", ["https://a.com/x"]),
        (
            "It is https://a.com/x, then https://b.org/y; and https://c.net/z.",
            ["https://a.com/x", "https://b.org/y", "https://c.net/z"],
        ),
        ("**https://a.com/x**", ["https://a.com/x"]),
        ("`https://a.com/x`", ["https://a.com/x"]),
        ("```\ncurl https://a.com/api/v1\n```", ["https://a.com/api/v1"]),
        ('[1]: https://a.com/x "Title"', ["https://a.com/x"]),
        ("| a | https://a.com/x|", ["https://a.com/x"]),
        (
            "[p](https://en.wikipedia.org/wiki/Mercury_(planet))",
            ["https://en.wikipedia.org/wiki/Mercury_(planet)"],
        ),
        ("visit www.a.com/x!", ["www.a.com/x"]),
        ('{"url": "https:\\/\\/a.com\\/x"}', ["https://a.com/x"]),
        (
            "{'url': 'https://a.com/x', 'content': 'line\\nhttps://b.org/y\\n'}",
            ["https://a.com/x", "https://b.org/y"],
        ),
        ("href=&quot;https://a.com/x&quot;", ["https://a.com/x"]),
        ("HTTPS://A.COM/X", ["HTTPS://A.COM/X"]),
        ("[v6](https://[2001:db8::1]/paper)", ["https://[2001:db8::1]/paper"]),
        ("no urls here, just https:// and www. and e.g. file.py", []),
        ("awww.a.com is not an address; neither is /www.a.com", []),
    ],
)
def test_urls_are_found_wherever_markdown_or_dumps_put_them(text, urls):
    assert extract_urls(text) == urls


# -- what counts as the same source -------------------------------------------------------


@pytest.mark.parametrize(
    "variant",
    [
        "https://a.com/x",
        "http://a.com/x",
        "HTTPS://A.COM/x",
        "https://www.a.com/x",
        "www.a.com/x",
        "https://a.com./x",
        "https://a.com:443/x",
        "https://user@a.com/x",
        "https://a.com/x/",
        "https://a.com/x#section-2",
        "https://a.com/./x",
        "https://a.com/y/../x",
        "https://a.com/%78",
        "https://a.com/x?utm_source=news&utm_medium=email",
        "https://a.com/x?fbclid=abc&gclid=def",
        "https://a.com/x?",
    ],
)
def test_spellings_of_one_source_are_the_same_source(variant):
    assert normalise_url(variant) == normalise_url("https://a.com/x")


@pytest.mark.parametrize(
    "other",
    [
        "https://a.com/x/evil",  # an extension of the returned URL
        "https://a.com/",  # a prefix of it
        "https://a.com/xevil",
        "https://a.com/X",  # paths are case-sensitive
        "https://a.com/x?id=2",
        "https://a.com.evil.net/x",  # a host that merely contains the returned one
        "https://evila.com/x",
        "https://evil.net/a.com/x",
        "https://a.com@evil.net/x",  # user info: the host is evil.net
        "https://sub.a.com/x",
        "https://a.com:8443/x",
    ],
)
def test_a_different_source_is_never_the_same(other):
    assert normalise_url(other) != normalise_url("https://a.com/x")


def test_query_order_and_percent_escapes_do_not_matter_but_values_do():
    assert normalise_url("https://a.com/s?b=2&a=1") == normalise_url("https://a.com/s?a=1&b=2")
    assert normalise_url("https://a.com/caf%C3%A9") == normalise_url("https://a.com/café")
    assert normalise_url("https://a.com/caf%c3%a9") == normalise_url("https://a.com/caf%C3%A9")
    assert normalise_url("https://bücher.de/x") == normalise_url("https://xn--bcher-kva.de/x")
    assert normalise_url("https://a.com/s?a=1&amp;b=2") == normalise_url("https://a.com/s?a=1&b=2")
    assert normalise_url("https://a.com/s?a=1") != normalise_url("https://a.com/s?a=2")


def test_cited_urls_counts_distinct_sources_keeping_the_first_spelling():
    text = (
        "https://a.com/x and https://www.a.com/x/ and [again](http://a.com/x#top), https://b.org/y"
    )
    assert cited_urls(text) == {"a.com/x": "https://a.com/x", "b.org/y": "https://b.org/y"}


def test_an_unreadable_port_is_still_a_cited_url():
    assert cited_urls("https://a.com:99999/x") == {"https://a.com:99999/x": "https://a.com:99999/x"}


# -- verdicts -----------------------------------------------------------------------------


def test_every_cited_url_returned_by_the_tools_passes():
    report = cite(
        "- Mercury is closest [1](https://a.com/x).\n"
        "- Venus is hot (https://b.org/papers/2024?id=7&utm_source=x).\n"
    )

    assert report["passed"] and report["score"] == 1.0
    assert report["kind"] == "citations"
    assert "all 2 distinct source URL(s) cited in notes.md" in report["evidence"]


def test_an_invented_url_fails_and_is_named_in_the_evidence():
    report = cite("Mercury [1](https://a.com/x); moons [2](https://invented.example/moons).")

    assert not report["passed"]
    assert report["score"] == 0.5
    assert "https://invented.example/moons" in report["evidence"]
    assert report["evidence"].startswith("1 of 2 URLs cited in notes.md did not appear")
    # the evidence names what the tools did return, so a revision can cite that instead
    assert "https://a.com/x" in report["evidence"].split("returned", 1)[1]


@pytest.mark.parametrize(
    "trick",
    [
        "https://a.com/x/evil",
        "https://a.com/xx",
        "https://a.com/",
        "https://a.com",
        "https://a.com.evil.net/x",
        "https://evil.net/?u=https://a.com/x",
        "https://b.org/papers/2024?id=8",
        "https://b.org/papers/2024",
        "https://en.wikipedia.org/wiki/Mercury_(planet)_evil",
        "www.evil.net",
        "https://[2001:db8::1]/x",
    ],
)
def test_a_url_that_only_resembles_a_returned_one_fails(trick):
    report = cite(f"Claim [1](https://a.com/x). Other claim: {trick}")

    assert not report["passed"], report
    assert trick in report["evidence"]


def test_an_invented_url_in_a_code_block_fails_too():
    report = cite("Source: https://a.com/x\n\n```bash\ncurl https://invented.example/api\n```\n")

    assert not report["passed"]
    assert "https://invented.example/api" in report["evidence"]


def test_an_artifact_citing_nothing_fails():
    report = cite("Mercury is the closest planet to the Sun.")

    assert not report["passed"] and report["score"] == 0.0
    assert report["evidence"].startswith("notes.md cites no source URL")


def test_without_tool_outputs_every_citation_is_ungrounded():
    report = run_check({"kind": "citations"}, {"n.md": "see https://a.com/x"}, "n.md")

    assert not report["passed"]
    assert "https://a.com/x" in report["evidence"]
    assert "the step's tools returned no URL" in report["evidence"]


def test_min_counts_distinct_sources():
    spec = {"kind": "citations", "min": 2}
    twice = cite("A https://a.com/x, again https://www.a.com/x/#top", spec=spec)
    both = cite("A https://a.com/x, B https://b.org/papers/2024?id=7", spec=spec)

    assert not twice["passed"] and twice["score"] == 0.5
    assert "cites 1 distinct source URL(s), fewer than the 2 required" in twice["evidence"]
    assert both["passed"]


def test_urls_count_from_any_of_the_outputs_in_any_spelling():
    report = cite(
        "A https://a.com/x and B https://c.net/y",
        '{"results": [{"url": "https://www.a.com/x/"}]}',
        "{'url': 'http://C.NET/y#frag'}",
    )

    assert report["passed"], report


def test_a_single_string_of_outputs_is_one_output_not_characters():
    report = run_check(
        {"kind": "citations"},
        {"n.md": "see https://a.com/x"},
        "n.md",
        tool_outputs="[1] https://a.com/x",  # type: ignore[arg-type]
    )

    assert report["passed"], report


def test_outputs_are_lent_only_for_the_call():
    from agent.checks import current_tool_outputs

    run_check({"kind": "citations"}, {"n.md": "x"}, "n.md", tool_outputs=["https://a.com/x"])

    assert current_tool_outputs() == ()


def test_many_invented_urls_are_all_counted_and_the_first_ones_named():
    invented = [f"https://invented.example/{i}" for i in range(30)]
    report = cite("\n".join(invented))

    assert not report["passed"]
    assert report["evidence"].startswith("30 of 30 URLs")
    assert invented[0] in report["evidence"] and "(and 22 more)" in report["evidence"]


@pytest.mark.parametrize(
    ("spec", "ok"),
    [
        ({"kind": "citations"}, True),
        ({"kind": "citations", "min": 3}, True),
        ({"kind": "citations", "min": 0}, False),
        ({"kind": "citations", "min": "2"}, False),
        ({"kind": "citations", "min": True}, False),
        ({"kind": "citations", "min": 1.5}, False),
    ],
)
def test_min_must_be_a_positive_whole_number(spec, ok):
    errors = validate_check_spec(spec)

    assert (errors == []) is ok, errors
    if not ok:
        assert "'min'" in errors[0]
        assert cite("https://a.com/x", spec=spec)["evidence"].startswith("invalid check spec")
