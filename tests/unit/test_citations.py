"""The ``citations`` check kind: which links an artifact cites, what counts as the same
source, verdicts; written as an adversary varies a hidden or look-alike source."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.checks import run_check, validate_check_spec
from agent.checks.citations import citations, cited_urls
from agent.checks.link_finding import extract_urls
from agent.checks.source_identity import UnverifiableURL, normalise_url
from tests.tiers import examples

RETURNED = (
    "[1] https://a.com/x\nMercury is the closest planet.\n\n"
    "[2] https://b.org/papers/2024?id=7\nVenus is hot.\n\n"
    "[3] https://en.wikipedia.org/wiki/Mercury_(planet)\nThe planet."
)
EVIL = "evil.example"


def cite(artifact: str, *outputs: str, spec: dict | None = None, path: str = "notes.md"):
    return run_check(
        spec or {"kind": "citations"},
        {path: artifact},
        path,
        tool_outputs=outputs or (RETURNED,),
    )


def keys(text: str) -> set[str | None]:
    return {c.key for c in citations(text)}


# -- extraction ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "urls"),
    [
        ("see [Mercury](https://a.com/x).", ["https://a.com/x"]),
        ("(source: https://a.com/x)", ["https://a.com/x"]),
        ("<https://a.com/x>", ["https://a.com/x"]),
        (
            "It is https://a.com/x, then https://b.org/y; and https://c.net/z.",
            ["https://a.com/x", "https://b.org/y", "https://c.net/z"],
        ),
        ("**https://a.com/x**", ["https://a.com/x"]),
        ("`https://a.com/x`", ["https://a.com/x"]),
        ("```\ncurl https://a.com/api/v1\n```", ["https://a.com/api/v1"]),
        ("    indented https://a.com/code\n", ["https://a.com/code"]),
        ('[1]: https://a.com/x "Title"', ["https://a.com/x"]),
        ("| a | https://a.com/x|", ["https://a.com/x"]),
        (
            "[p](https://en.wikipedia.org/wiki/Mercury_(planet))",
            ["https://en.wikipedia.org/wiki/Mercury_(planet)"],
        ),
        ("visit www.a.com/x!", ["www.a.com/x"]),
        ('{"url": "https:\\/\\/a.com\\/x"}', ["https://a.com/x"]),
        ("href=&quot;https://a.com/x&quot;", ["https://a.com/x"]),
        ("HTTPS://A.COM/X", ["HTTPS://A.COM/X"]),
        ("[v6](https://[2001:db8::1]/paper)", ["https://[2001:db8::1]/paper"]),
        ("![fig](https://a.com/fig.png)", ["https://a.com/fig.png"]),
        ("[a](<https://a.com/x y>)", ["https://a.com/x y"]),
        ("[a][R]\n\n[r]: https://a.com/ref", ["https://a.com/ref"]),
        (
            "https://en.wikipedia.org/wiki/Hitchhiker's_Guide",
            ["https://en.wikipedia.org/wiki/Hitchhiker's_Guide"],
        ),
    ],
)
def test_urls_are_found_wherever_markdown_or_dumps_put_them(text, urls):
    found = extract_urls(text)

    assert [u for u in urls if u not in found] == [], found


@pytest.mark.parametrize(
    "text",
    [
        "no urls here, just https:// and www. and e.g. file.py",
        "awww.a.com is not an address; neither is /www.a.com",
        "[methods](#methods), [data](data/table.csv), [up](../README.md), [q](?page=2)",
        "write to <jane@uni.example> or [call](tel:+15551234) or [mail](mailto:j@uni.example)",
        "Node.js/Deno, main.py/run, U.S./Canada, 1.5/2, e.g./i.e., src/v1.2/notes",
    ],
)
def test_relative_links_mail_and_prose_cite_nothing(text):
    assert extract_urls(text) == []


def test_a_dump_is_read_as_a_dump_where_it_is_a_source():
    dump = "{'url': 'https://a.com/x', 'content': 'line\\nhttps://b.org/y\\n'}"

    assert {"https://a.com/x", "https://b.org/y"} <= set(extract_urls(dump, source=True))
    assert cite("see https://b.org/y and https://a.com/x", dump)["passed"]


@pytest.mark.parametrize(
    ("url", "short"),
    [
        ("https://a.com/s?q=[x]", "https://a.com/s?q="),
        ("https://a.com/s?a|b", "https://a.com/s?a"),
        ("https://a.com/x'", "https://a.com/x"),
        ("https://a.com/x.", "https://a.com/x"),
        ("https://a.com/a`b`", "https://a.com/a"),
    ],
)
def test_a_link_read_short_as_text_is_still_one_source(url, short):
    assert cite(f"see [a](<{url}>)\n\n[b]: {url}", f"[r]({url})")["passed"]
    # written on its own, the short reading is a citation of its own
    alone = cite(f"see [a](<{url}>) and {short} here", f"[r]({url})")
    assert not alone["passed"] and short in alone["evidence"]


def test_a_markdown_escape_in_a_url_is_read_as_rendered():
    assert cite("see https://a.com/x\\_y\\_z.", "https://a.com/x_y_z")["passed"]
    assert not cite("see https://a.com/x\\..\\evil", "https://a.com/x")["passed"]


def test_each_source_is_counted_once_however_often_and_wherever_it_is_written():
    text = "[https://a.com/x](https://a.com/x) <https://a.com/x> https://a.com/x#top"

    assert keys(text) == {"https://a.com/x"}


# -- links that hide a source: each must be checked ---------------------------------------

HIDDEN = [
    # the character references of a Markdown link, every spelling
    "[a](https&#58;//evil.example/x)",
    "[a](https&#058;//evil.example/x)",
    "[a](https&#x3a;//evil.example/x)",
    "[a](https&#X3A;//evil.example/x)",
    "[a](https&colon;//evil.example/x)",
    "[a](https&#58;&#47;&#47;evil.example/x)",
    "[a](&#104;ttps://evil.example/x)",
    "[a](https://evil&period;example/x)",
    "[a](https&#58//evil.example/x)",  # no ";": not decoded by Markdown, still looks like one
    "[a](https&amp;#58;//evil.example/x)",  # double encoding
    "[a](<https&#58;//evil.example/x>)",
    '[a](https&#58;//evil.example/x "a title")',
    "[a [nested] link](https&#58;//evil.example/x)",
    "![img](https&#58;//evil.example/i.png)",
    # reference definitions, used or not
    "[a]: https&#58;//evil.example",
    "[a]: <https&#x3A;//evil.example/x> 'title'",
    "see [a][Ref]\n\n[ref]: https&colon;//evil.example",
    # protocol-relative and backslashed links: resolved against nothing
    "[a](//evil.example/x)",
    "[a](\\\\\\\\evil.example/x)",
    "[a](<//evil.example/x>)",
    "[a](&#47;&#47;evil.example/x)",
    "<a/href=//evil.example/x>a</a>",
    '<a title=">" href="//evil.\nexample/x">a</a>',
    '<a href="&sol;&sol;evil.example">a</a>',  # Markdown's "\\\\" is one backslash
    "[a](/\\evil.example/x)",
    "[a]: //evil.example/x",
    "![i](//evil.example/i.png)",
    '<a href="//evil.example/x">a</a>',
    '<img src="\\\\evil.example\\i.png">',
    # HTML tags, entity-encoded attributes, every URL attribute
    '<a href="https&#x3a;//evil.example">a</a>',
    '<a href="https&#X3A;//evil.example">a</a>',
    "<a href='https&#58;//evil.example'>a</a>",
    "<a href=https&#58;//evil.example>a</a>",
    '<A HREF="https&colon;//evil.example">a</A>',
    '<a title="x" href = "&#104;&#116;&#116;&#112;&#115;&#58;&#47;&#47;evil.example">a</a>',
    '<a href="ht&#10;tps://evil.example">a</a>',
    '<a href="ht\ttps://evil.example">a</a>',
    '<img src="https&#58;//evil.example/i.png">',
    '<img srcset="https://a.com/x 1x, https&#58;//evil.example/i.png 2x">',
    '<iframe src="https://evil.example/embed"></iframe>',
    '<form action="https://evil.example/post"></form>',
    '<video poster="https://evil.example/p.jpg"></video>',
    '<object data="https://evil.example/o"></object>',
    '<blockquote cite="https://evil.example/q">q</blockquote>',
    '<meta http-equiv="refresh" content="0; url=https://evil.example/">',
    '<span title="https://evil.example/t">hover</span>',
    '<div style="background:url(https://evil.example/bg.png)">x</div>',
    "<!-- https://evil.example/hidden -->",
    '<base href="https://a.com/"><a href="../evil">a</a>',
    "<p>\nhttps&#58;//evil.example/block\n</p>",
    # schemes and separators as a browser reads them
    "HTTPS://EVIL.EXAMPLE/x",
    "[a](HtTpS://evil.example/x)",
    "[a](https:/evil.example/x)",
    "[a](https:\\\\evil.example\\x)",
    "[a](https:evil.example/x)",
    "https:\\\\evil.example\\x",
    "https:/evil.example/x",
    "https\\://evil.example/x",
    "h\u200bttps://evil.example/x",
    "ht\u00adtps://evil.example/x",
    "\uff48\uff54\uff54\uff50\uff53\uff1a\uff0f\uff0fevil.example/x",
    "https://evil\uff0eexample/x",
    "https://a.com@evil.example/x",  # user info: the host is evil.example
    "[a](https://a.com:x@evil.example/x)",
    "https://%65vil.example/x",
    "https://evil.example\\@a.com/x",  # "\\" is "/": the host is evil.example
    "[a](https://evil.example%5C@a.com/x)",
    "https://a.com/x\\..\\..\\evil.example",
    "[a](https://a.com/x/../../evil.example)",
    "[a](https://a.com/x/%2e%2e/evil.example)",
    # links in code, titles and link text count too
    "`https://evil.example/x`",
    "```\ncurl https://evil.example/api\n```",
    '[a](https://a.com/x "https://evil.example/t")',
    "[https://evil.example/x](https://a.com/x)",
    # other schemes: no tool returned them
    "[a](javascript:location='//evil.example')",
    "[a](JaVaScRiPt:alert(1))",
    "[a](data:text/html;base64,PGEgaHJlZj0iZXZpbCI+)",
    "[a](file:///etc/evil.example)",
    "[a](ftp://evil.example/x)",
    "[a](vbscript:evil.example)",
    "[a](mailto:x@a.com?body=https://evil.example/x)",
    # an address without a scheme that looks like a host
    "[a](evil.example/paper)",
    "[a](www.evil.example)",
    "www.evil.example/x",
    "Source: evil.example/papers/2024.",
    "(evil.example/x)",
]


@pytest.mark.parametrize("hidden", HIDDEN)
def test_a_hidden_or_unverifiable_link_fails_beside_a_returned_one(hidden):
    report = cite(f"Claim [1](https://a.com/x).\n\n{hidden}\n")
    inline = cite(f"Claim [1](https://a.com/x). Other claim: {hidden}")

    assert not report["passed"] and report["score"] < 1, report
    if not hidden.startswith("[a]: //"):  # in a sentence, a definition is text, not a link
        assert not inline["passed"] and inline["score"] < 1, inline
    assert report["evidence"].startswith("1 of 2 URLs cited") or "of 3 URLs" in report["evidence"]


@pytest.mark.parametrize(
    ("link", "reason"),
    [
        ("//evil.example/x", "protocol-relative"),
        ("\\\\evil.example/x", "protocol-relative"),
        ("javascript:alert(1)", "javascript:"),
        ("data:text/plain,x", "data:"),
        ("file:///etc/passwd", "file:"),
        ("ftp://a.com/x", "ftp:"),
        ("notes.md", "relative"),
        ("https&#58;//evil.example", "relative link hiding"),
        ("https://", "not a URL"),
        ("https://a.com:99999/x", "not a URL"),
        ("https://[2001:db8::1/x", "not a URL"),
        ("https://a b.com/x", "not a URL"),
        ("https://\U0001f600.example/x", "IDNA 2008"),
        ("https://xn--zz.example/x", "IDNA 2008"),
    ],
)
def test_a_link_that_names_no_returnable_source_is_unverifiable(link, reason):
    with pytest.raises(UnverifiableURL, match=reason):
        normalise_url(link)


def test_an_unverifiable_link_fails_even_when_its_text_was_returned():
    report = cite("see [a](//a.com/x) and <https://a.com:99999/x>", "https://a.com/x //a.com/x")

    assert not report["passed"]
    assert "//a.com/x (protocol-relative: resolved against nothing)" in report["evidence"]
    assert "https://a.com:99999/x (not a URL a browser could open)" in report["evidence"]


def test_a_returned_protocol_relative_link_is_no_source():
    assert not cite("see https://a.com/x", "related: //a.com/x")["passed"]


# -- what counts as the same source -------------------------------------------------------


@pytest.mark.parametrize(
    "variant",
    [
        "https://a.com/x",
        "HTTPS://A.COM/x",
        "https://a.com./x",
        "https://a.com:443/x",
        "https://a.com:/x",
        "https://a.com/x/",
        "https://a.com/x#section-2",
        "https://a.com/./x",
        "https://a.com/y/../x",
        "https://a.com/y/%2E%2e/x",
        "https://a.com/%78",
        "https://%61.com/x",
        "https://a%2Ecom/x",
        "https://\uff41.com/x",  # fullwidth "a": UTS 46 maps it, as a browser does
        "https://a\uff0ecom/x",
        "https://a.com/x?utm_source=news&utm_medium=email",
        "https://a.com/x?fbclid=abc&gclid=def",
        "https://a.com/x?",
        "https:/a.com/x",  # what a browser opens for each of these
        "https:\\\\a.com\\x",
        "https:a.com/x",
        " https://a.com/x\t",
        "ht\ntps://a.com/x",
    ],
)
def test_spellings_of_one_source_are_the_same_source(variant):
    assert normalise_url(variant) == normalise_url("https://a.com/x")


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("https://a.com/x", "https://a.com/x/evil"),  # an extension of the returned URL
        ("https://a.com/x", "https://a.com/"),  # a prefix of it
        ("https://a.com/x", "https://a.com/xevil"),
        ("https://a.com/x", "https://a.com/X"),  # paths are case-sensitive
        ("https://a.com/x", "https://a.com/x?id=2"),
        ("https://a.com/x", "https://a.com.evil.net/x"),
        ("https://a.com/x", "https://evila.com/x"),
        ("https://a.com/x", "https://evil.net/a.com/x"),
        ("https://a.com/x", "https://a.com@evil.net/x"),
        ("https://a.com/x", "https://sub.a.com/x"),
        ("https://a.com/x", "https://a.com:8443/x"),
        # which server is asked: scheme, user info and host are all significant
        ("https://a.com/x", "http://a.com/x"),
        ("https://a.com/x", "https://www.a.com/x"),
        ("https://a.com/x", "https://user@a.com/x"),
        ("http://a.com/x", "http://a.com:443/x"),
        # IDNA 2008, UTS 46 non-transitional: the German sharp s and the final sigma are
        # letters of their own (IDNA 2003 mapped them to "ss" and "σ")
        ("https://fass.de/x", "https://faß.de/x"),
        ("https://FASS.de/x", "https://FAß.DE/x"),
        ("https://fass.de/x", "https://xn--fa-hia.de/x"),
        ("https://ασ.gr/x", "https://ας.gr/x"),
        # reserved characters escaped are not the characters themselves (RFC 3986 2.2)
        ("https://a.com/x/y", "https://a.com/x%2Fy"),
        ("https://a.com/x/y", "https://a.com/x%2fy"),
        ("https://a.com/x%2Fy", "https://a.com/x%252Fy"),
        ("https://a.com/x/y", "https://a.com/x%5Cy"),
        ("https://a.com/a!b", "https://a.com/a%21b"),
        ("https://a.com/a$b", "https://a.com/a%24b"),
        ("https://fass.de/x", "https://fa%C3%9F.de/x"),
        ("https://a.com/x?y", "https://a.com/x%3Fy"),
        ("https://a.com/x", "https://a.com/x%23y"),
        ("https://a.com/s?a=1&b=2", "https://a.com/s?a=1%26b=2"),
        ("https://a.com/s?a=b", "https://a.com/s?a%3Db"),
        ("https://a.com/x", "https://a.com/x%2F"),
        ("https://a.com/x", "https://a.com/x%2E"),
        ("https://a.com/x/..", "https://a.com/x/%252E%252E"),
        ("https://a.com/a+b", "https://a.com/a%20b"),
        ("https://a.com/x", "https://a.com/x\u200b"),
    ],
)
def test_a_different_source_is_never_the_same(one, other):
    assert normalise_url(one) != normalise_url(other)


def test_query_order_and_percent_escapes_do_not_matter_but_values_do():
    assert normalise_url("https://a.com/s?b=2&a=1") == normalise_url("https://a.com/s?a=1&b=2")
    assert normalise_url("https://a.com/caf%C3%A9") == normalise_url("https://a.com/café")
    assert normalise_url("https://a.com/caf%c3%a9") == normalise_url("https://a.com/caf%C3%A9")
    assert normalise_url("https://a.com/%7Ex") == normalise_url("https://a.com/~x")
    assert normalise_url("https://a.com/a%20b") == normalise_url("https://a.com/a b")
    assert normalise_url("https://a.com/a|b") == normalise_url("https://a.com/a%7Cb")
    assert normalise_url("https://bücher.de/x") == normalise_url("https://xn--bcher-kva.de/x")
    assert normalise_url("https://BÜCHER.de/x") == normalise_url("https://bücher.de/x")
    assert normalise_url("https://faß.de/x") == normalise_url("https://xn--fa-hia.de/x")
    assert normalise_url("https://a.com/s?a=1") != normalise_url("https://a.com/s?a=2")
    assert normalise_url("https://a.com/s?A=1") != normalise_url("https://a.com/s?a=1")


URL_PART = st.lists(
    st.sampled_from(
        list("aZ09./?#&=@:;+~-_ \\|'\"éß\u200b．[]()!*,$")
        + ["%2F", "%2e", "%25", "%7E", "%C3%A9", "..", "xn--", "%zz", "&amp;"]
    ),
    max_size=12,
).map("".join)


@settings(max_examples=examples(300), deadline=None)
@given(
    st.sampled_from(["https://", "http://", "HTTPS:/", "https:\\\\", "www."]),
    st.sampled_from(["a.com", "faß.de", "bücher.de", "[::1]", "x.y:8080", "u@a.com"]),
    URL_PART,
)
def test_a_key_is_its_own_key(scheme, host, rest):
    try:
        key = normalise_url(f"{scheme}{host}/{rest}")
    except UnverifiableURL:
        return
    assert normalise_url(key.removeprefix("//")) == key


def test_keys_name_scheme_host_path_and_sorted_query():
    assert normalise_url("HTTPS://A.com:443/x/./y/?b=2&utm_source=t&a=1#part") == (
        "https://a.com/x/y?a=1&b=2"
    )
    assert normalise_url("https://[2001:DB8:0::1]:8080/p") == "https://[2001:db8::1]:8080/p"
    assert normalise_url("https://0x7f.1/") == "https://127.0.0.1/"
    assert normalise_url("www.a.com/x") == "//www.a.com/x"


def test_an_address_without_a_scheme_matches_either_scheme_and_nothing_else():
    assert cite("see www.a.com/x", "https://www.a.com/x")["passed"]
    assert cite("see www.a.com/x", "http://www.a.com/x/")["passed"]
    assert cite("see https://www.a.com/x", "result: www.a.com/x")["passed"]
    assert cite("see [a](a.com/x)", "https://a.com/x")["passed"]
    assert cite("source: a.com/x.", "https://a.com/x")["passed"]
    assert not cite("see www.a.com/x", "https://a.com/x")["passed"]


def test_cited_urls_counts_distinct_sources_keeping_the_first_spelling():
    text = "https://a.com/x and https://A.com/x/ and again https://a.com/x#top, https://b.org/y"

    assert cited_urls(text) == {
        "https://a.com/x": "https://a.com/x",
        "https://b.org/y": "https://b.org/y",
    }


# -- legitimate artifacts still pass ------------------------------------------------------


def test_a_source_returned_in_another_spelling_is_the_same_source():
    report = cite(
        "- [b](https://example.com/b)\n- [c](https://example.com/c%7Ex)\n- [d](https://bücher.de/x)",
        "results: https://Example.COM/a/../b , https://example.com/c~x ,"
        " https://xn--bcher-kva.de/x/#top",
    )

    assert report["passed"], report


def test_a_realistic_note_with_html_code_and_relative_links_passes():
    returned = (
        '{"results": [{"url": "https://a.com/x?a=1&region=eu", "content": "A &amp; B"},'
        ' {"url": "https:\\/\\/b.org\\/papers\\/2024?id=7"},'
        ' {"url": "https://en.wikipedia.org/wiki/Mercury_(planet)"}]}'
    )
    note = (
        "# Notes\n\nSee [methods](#methods) and [the table](data/table.csv).\n\n"
        "1. Mercury [1](https://a.com/x?a=1&region=eu).\n"
        '2. Venus <a href="https://b.org/papers/2024?id=7&amp;utm_source=x">[2]</a>.\n'
        "3. The planet: https://en.wikipedia.org/wiki/Mercury_(planet).\n\n"
        "```bash\ncurl 'https://a.com/x?region=eu&a=1'\n```\n\n"
        '[1]: https://a.com/x?a=1&region=eu "Mercury"\n'
        "Questions: <jane@uni.example>.\n"
    )

    report = cite(note, returned, spec={"kind": "citations", "min": 3})

    assert report["passed"], report
    assert report["evidence"].startswith("all 3 distinct source URL(s)")


def test_an_apostrophe_inside_a_url_is_part_of_it_on_both_sides():
    url = "https://en.wikipedia.org/wiki/Hitchhiker's_Guide"

    assert cite(f"[H]({url})", f"{{'url': '{url}', 'title': 'H'}}")["passed"]
    assert cite(f"see {url}.", f'{{"url": "{url}"}}')["passed"]
    assert not cite(f"see {url}", "{'url': 'https://en.wikipedia.org/wiki/Hitchhiker'}")["passed"]


def test_an_entity_spelled_link_to_a_returned_source_is_that_source():
    assert cite("[a](https&#58;//a.com/x) <a href='https&#x3A;//a.com/x'>b</a>")["passed"]


def test_a_base_href_that_was_returned_makes_relative_links_citations():
    base = '<base href="https://a.com/">\n\n'

    assert cite(f"{base} [a](x)", "https://a.com/ https://a.com/x")["passed"]
    assert not cite(f"{base} [a](y)", "https://a.com/ https://a.com/x")["passed"]


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
        "http://a.com/x",
        "https://www.a.com/x",
    ],
)
def test_a_url_that_only_resembles_a_returned_one_fails(trick):
    report = cite(f"Claim [1](https://a.com/x). Other claim: {trick}")

    assert not report["passed"], report
    assert trick in report["evidence"]


def test_an_idna_2003_look_alike_host_fails_both_ways():
    assert not cite("see https://faß.de/x", "https://fass.de/x")["passed"]
    assert not cite("see https://fass.de/x", "https://faß.de/x")["passed"]
    assert cite("see https://FAß.de/x", "https://xn--fa-hia.de/x")["passed"]


def test_an_escaped_slash_is_not_a_returned_path():
    assert not cite("see https://a.com/x%2Fy", "https://a.com/x/y")["passed"]
    assert not cite("see https://a.com/x/y", "https://a.com/x%2Fy")["passed"]
    assert cite("see https://a.com/x%2fy", "https://a.com/x%2Fy")["passed"]


def test_an_artifact_citing_nothing_fails():
    report = cite("Mercury is the closest planet to the Sun. See [methods](#methods).")

    assert not report["passed"] and report["score"] == 0.0
    assert report["evidence"].startswith("notes.md cites no source URL")


def test_without_tool_outputs_every_citation_is_ungrounded():
    report = run_check({"kind": "citations"}, {"n.md": "see https://a.com/x"}, "n.md")

    assert not report["passed"]
    assert "https://a.com/x" in report["evidence"]
    assert "the step's tools returned no URL" in report["evidence"]


def test_min_counts_distinct_sources():
    spec = {"kind": "citations", "min": 2}
    twice = cite("A https://a.com/x, again https://A.com/x/#top", spec=spec)
    both = cite("A https://a.com/x, B https://b.org/papers/2024?id=7", spec=spec)

    assert not twice["passed"] and twice["score"] == 0.5
    assert "cites 1 distinct source URL(s), fewer than the 2 required" in twice["evidence"]
    assert both["passed"]


def test_urls_count_from_any_of_the_outputs_in_any_spelling():
    report = cite(
        "A https://a.com/x and B https://c.net/y",
        '{"results": [{"url": "https://a.com/x/"}]}',
        "{'url': 'https://C.NET/y#frag'}",
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
        ({"kind": "citations", "min": 0}, True),  # none needed, none invented
        ({"kind": "citations", "min": -1}, False),
        ({"kind": "citations", "min": "2"}, False),
        ({"kind": "citations", "min": True}, False),
        ({"kind": "citations", "min": 1.5}, False),
    ],
)
def test_min_must_be_a_whole_number_not_below_zero(spec, ok):
    errors = validate_check_spec(spec)

    assert (errors == []) is ok, errors
    if not ok:
        assert "'min'" in errors[0]
        assert cite("https://a.com/x", spec=spec)["evidence"].startswith("invalid check spec")


@pytest.mark.parametrize(
    "hostile",
    [
        "https:" + "/" * 50_000,
        "https://a.com/" + ")" * 50_000,
        "https://" + "a@" * 25_000,
        "https://[" + ":" * 50_000,
        "<a " * 20_000,
        "&#" * 25_000,
        ("a" * 50 + ".") * 1_000 + "com/x",
        "[" * 10_000,
    ],
)
def test_hostile_text_is_read_without_error_and_cites_no_valid_source(hostile):
    # its time, beside an input four times as long, is a benchmark: bench/hostile_text.py
    found = citations(hostile)
    assert all(isinstance(c.url, str) and c.url in hostile for c in found)
    assert all(c.key is None or "a.com" in c.key for c in found)


def test_with_min_0_a_document_citing_nothing_passes_and_an_invented_url_fails():
    spec = {"kind": "citations", "min": 0}
    assert run_check(spec, {"r.md": "No links here."}, "r.md")["passed"]
    invented = run_check(spec, {"r.md": "See https://made.up/x."}, "r.md")
    assert not invented["passed"] and "made.up" in invented["evidence"]
    returned = "1. https://made.up/x - a result"
    assert run_check(spec, {"r.md": "See https://made.up/x."}, "r.md", tool_outputs=returned)[
        "passed"
    ]


RESULTS = (
    "[1] https://docs.example.org/hnsw\nHNSW ist ein Graphindex für die ungefähre Suche nach "
    "nächsten Nachbarn, mit mehreren Ebenen und hoher Trefferquote.\n\n"
    "[2] https://docs.example.org/ivf\nIVF clusters the vectors with k-means and searches only "
    "the clusters nearest to the query."
)


def test_text_copied_from_a_source_must_cite_it_in_any_language():
    spec = {"kind": "citations", "min": 0}
    copied = "HNSW ist ein Graphindex für die ungefähre Suche nach nächsten Nachbarn, schnell."
    report = run_check(spec, {"r.md": copied}, "r.md", tool_outputs=RESULTS)
    assert not report["passed"]
    assert "https://docs.example.org/hnsw" in report["evidence"]
    assert "docs.example.org/ivf" not in report["evidence"]  # nothing of it was copied
    cited = copied + " [Quelle](https://docs.example.org/hnsw)"  # cited as a link
    assert run_check(spec, {"r.md": cited}, "r.md", tool_outputs=RESULTS)["passed"]
    # a few words in common (a name, a phrase) are not a copy
    own = "IVF clusters the vectors, then HNSW links them: two ways to search."
    assert run_check(spec, {"r.md": own}, "r.md", tool_outputs=RESULTS)["passed"]


def test_a_copy_asks_for_its_source_even_when_enough_others_are_cited():
    spec = {"kind": "citations", "min": 1}
    text = (
        "See https://docs.example.org/hnsw. IVF clusters the vectors with k-means and "
        "searches only the clusters nearest to the query."
    )
    report = run_check(spec, {"r.md": text}, "r.md", tool_outputs=RESULTS)
    assert not report["passed"] and "https://docs.example.org/ivf" in report["evidence"]
