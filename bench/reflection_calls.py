"""Model calls and tokens per solved task: rule-decided reflection against asking every time.

    python bench/reflection_calls.py [--steps 5 10 30]

deepreflect continues by rule while every new artifact passes its check (design.md rule 0);
the baseline asks the reflection model after every round, as a naive reflection loop does.
Both solve the same sequential plans on the same scripted models.
"""

from __future__ import annotations

import argparse

from common import CONTEXT, chain, report, roles, sqlite_graph

from agent import ScriptedChatModel, run
from agent.models.scenarios import finish_or_continue
from agent.models.scripted import prompt_json
from agent.reflection.rules import RULES, rule_progress

ASK_EVERY_TIME = tuple(rule for rule in RULES if rule is not rule_progress)


def solve(steps: int, rules) -> tuple[int, int]:
    models = roles(chain(steps), 1000, [])
    # continue while steps remain, end when all are done: the same answers a real model gives
    models["reflection"] = ScriptedChatModel(
        responder=lambda messages: finish_or_continue(prompt_json(messages))
    )
    graph, _ = sqlite_graph(models, reflection_rules=rules)
    context = CONTEXT.__class__(**{**CONTEXT.__dict__, "max_reflection_depth": 10})
    result = run(graph, "write the parts", context=context, thread_id="bench")
    usage = result["usage"]
    calls = sum(role["calls"] for role in usage.values())
    tokens = sum(role["total_tokens"] for role in usage.values())
    if result["status"] != "success" and result["stop_reason"] != "depth_cap":
        # a run that stops for another reason measures nothing: say why, never print -1
        raise SystemExit(f"{steps} steps: {result['stop_reason']}: {result['message']}")
    return (calls, tokens) if result["status"] == "success" else (-1, -1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[5, 10, 30])
    args = parser.parse_args()
    rows = []
    for steps in args.steps:
        calls, tokens = solve(steps, RULES)
        base_calls, base_tokens = solve(steps, ASK_EVERY_TIME)
        solved = "no (depth cap)" if base_calls < 0 else "yes"
        rows.append(
            [
                steps,
                calls,
                tokens,
                base_calls if base_calls >= 0 else "-",
                base_tokens if base_tokens >= 0 else "-",
                solved,
                f"{base_tokens / tokens:.2f}x" if base_tokens > 0 else "-",
            ]
        )
    report(
        "Model calls and tokens per solved task (all roles)",
        rows,
        [
            "plan steps",
            "calls",
            "tokens",
            "ask-every calls",
            "ask-every tokens",
            "baseline solved",
            "tokens saved",
        ],
    )


if __name__ == "__main__":
    main()
