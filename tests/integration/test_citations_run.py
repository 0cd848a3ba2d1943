"""A research step end to end: it searches, cites, and its ``citations`` check holds it to
the URLs its search returned (issue 10, item 7), on scripted models and a local search tool."""

from __future__ import annotations

import re
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, ToolMessage

from agent import run
from agent.models.scripted import tool_call
from agent.runs.runner import thread_config
from agent.tools.search import local_search_tool
from tests.fakes import END, ctx, models, sqlite_graph, step

CORPUS = {
    "https://solar.example/mercury": "Mercury is the closest planet to the Sun.",
    "https://solar.example/venus": "Venus is the hottest planet of the solar system.",
}
RETURNED = "https://solar.example/mercury"
INVENTED = "https://journal.example/2031/mercury-moons"
CITATIONS = {"kind": "citations", "min": 1}
# the invented source as the first draft writes it: plainly, and in each form that once hid
# it from the check (issue 21: an entity in a link, a protocol-relative link, an HTML
# entity-encoded href, an entity-encoded reference definition) and their variants
HIDDEN = {
    "plain": f"([2]({INVENTED}))",
    "entity in a link": "([2](https&#58;//journal.example/2031/mercury-moons))",
    "protocol-relative": "([2](//journal.example/2031/mercury-moons))",
    "entity href": '(<a href="https&#x3a;//journal.example/2031/mercury-moons">2</a>)',
    "entity reference definition": "[2]\n\n[2]: https&#58;//journal.example/2031/mercury-moons",
    "named entity, upper case scheme": "([2](HTTPS&colon;//journal.example/2031/mercury-moons))",
    "backslashes": "([2](https:\\\\journal.example\\2031\\mercury-moons))",
    "look-alike path": "([2](https://solar.example/mercury%2Fmoons))",
}


def researcher(drafts: list[str], invented: str = HIDDEN["plain"]):
    """Searches once for its first draft, then writes: the first draft cites the URL the search
    returned and an invented one, the revision only the returned one. Reads its step and
    revision from the call's metadata, never from the prompt."""

    def respond(messages: list[BaseMessage], metadata: dict[str, Any]) -> Any:
        last = messages[-1]
        revision = metadata["revision"]
        if isinstance(last, ToolMessage) and last.name == "write_file":
            return "wrote the notes"
        if revision == 0 and not isinstance(last, ToolMessage):
            return tool_call("search", query="closest planet")
        body = f"# Notes\n\n- Mercury is the closest planet to the Sun ([1]({RETURNED})).\n"
        if revision == 0:
            body += f"- Mercury has two moons {invented}.\n"
        drafts.append(body)
        return tool_call("write_file", path=metadata["expected_output"], content=body)

    return respond


@pytest.mark.parametrize("form", list(HIDDEN))
def test_an_invented_citation_fails_the_check_and_the_revision_without_it_passes(tmp_path, form):
    plan = [step("S1", "notes.md", action="researcher", check=CITATIONS, text="Research Mercury.")]
    drafts: list[str] = []
    roles = models(plan, [END], researcher(drafts, HIDDEN[form]))
    search = local_search_tool(CORPUS)
    graph, _ = sqlite_graph(tmp_path, roles, tools={"researcher": [search]})

    result = run(graph, "Notes on Mercury, with sources", context=ctx(), thread_id="t")

    values = graph.get_state(thread_config("t")).values
    events = [e for e in values["trajectory"] if e["step_id"] == "S1" and e["round"] == 1]
    searches = [e for e in events if e["action"] == "search"]
    checks = [e for e in events if e["action"] == "check"]
    assert len(searches) == 1 and RETURNED in searches[0]["observation"]
    assert len(drafts) == 2 and HIDDEN[form] in drafts[0] and "[2]" not in drafts[1]
    first, second = checks
    assert first["check"]["passed"] is False
    # every URL but the returned one is ungrounded (an invented link read two ways, with a
    # trailing "." or through a "\\", counts twice)
    counts = re.search(r"(\d) of (\d) URLs cited in notes.md did not appear", first["observation"])
    assert counts is not None and int(counts[2]) - int(counts[1]) == 1, first["observation"]
    named = first["observation"].split("; the step's tools returned", 1)[0]
    assert "mercury-moons" in named or "mercury%2Fmoons" in named, named
    assert f"{RETURNED}," not in named and not named.endswith(RETURNED)  # only the invented one
    assert second["check"]["passed"] is True, second
    assert result["status"] == "success", result
    notes = values["files"]["notes.md"]
    assert notes["status"] == "done" and "citations:" in notes["check"]["evidence"]
    assert "moons" not in notes["content"]
