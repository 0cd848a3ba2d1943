"""The one-way link between a check and the artifact it judges, which run in two sandboxes.

The artifact's code never runs in the process that decides the verdict: the check's process
imports artifact modules as proxies, and every attribute read, call or operator on them is a
request over a socket to the artifact's process. The two ends are two types:
:class:`~.check_side.CheckSide` (the check's process) only sends requests and reads their
replies, and serves nothing but calls of its own callbacks; :class:`~.artifact_side.ArtifactSide`
(the artifact's process) answers requests. Anything else from the artifact's side taints the
check (a failed verdict).

Modules: ``wire`` (length-prefixed JSON messages, :class:`~.wire.BridgeError`), ``plain_data``
(values as tagged JSON, rebuilt from their base types), ``operations`` (what a handle forwards),
``remote`` (handles, which take part in no decision of the check's: comparisons, truth, hashing
and conversions of a handle fail the check), ``class_facts`` (what a handle's class would
answer of it, refused to the check's code), ``check_side``, ``artifact_side``,
``introspection`` (an exception's class chain, read without running the artifact's code) and
``names`` (the names a check's code reads without binding them).
Messages: ``request {id, op, args}`` and ``callback_reply`` (check → artifact), ``reply {id, ok,
value | error}`` and ``callback {id, callback, args, kwargs}`` (artifact → check). Non-plain
values: ``["h", id, type]`` an artifact object (a handle, labelled by its class's name), ``["e",
id, name, chain, base]`` an artifact exception class, ``["r", id]`` an artifact object sent back,
``["c", id]`` a check callback.

Standard library only: this package is copied into both sandboxes as ``__deepreflect_bridge__``
(``agent.sandbox.programs.program_package``) and imported there; its modules import each other
relatively, so the same text works under either name.
"""
