"""Reflection prompt size as artifacts grow (10 files x 1 KB -> 10 files x 1 MB).

    python bench/reflection_prompt.py

Reflection sees summaries (status, bytes, age, check result), never contents, so its prompt
should stay flat while the artifacts grow a thousandfold. The baseline is the prompt a
reflection would get if it were handed the files' contents, as seed 000 warns against.
"""

from __future__ import annotations

import json

from common import CONTEXT, END, chain, report, roles, sqlite_graph

from agent import run


def reflection_prompt_chars(size: int) -> tuple[int, int]:
    models = roles(chain(10), size, [END])
    graph, _ = sqlite_graph(models)
    result = run(graph, "write ten parts", context=CONTEXT, thread_id="bench")
    assert result["status"] == "success", result
    prompt = sum(len(str(m.content)) for m in models["reflection"].calls[0])
    files = graph.get_state({"configurable": {"thread_id": "bench"}}).values["files"]
    with_contents = prompt + len(json.dumps({p: e["content"] for p, e in files.items()}))
    return prompt, with_contents


def main() -> None:
    rows = []
    base = None
    for size in (1_000, 10_000, 100_000, 1_000_000):
        prompt, with_contents = reflection_prompt_chars(size)
        base = base or prompt
        rows.append(
            [
                f"10 x {size:,}",
                f"{prompt:,}",
                f"{prompt / base:.3f}x",
                f"{with_contents:,}",
                f"{with_contents / prompt:,.0f}x",
            ]
        )
    report(
        "Reflection prompt size (characters)",
        rows,
        ["artifacts B", "prompt", "vs 1 KB", "with contents", "contents/ours"],
    )


if __name__ == "__main__":
    main()
