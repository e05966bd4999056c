"""What one streamed event carries: an answer token, a reasoning token, or no token; a malformed one in words.

OpenAI-compatible chat streams put each event's tokens in `choices[0].delta`:

    content             the answer's text
    tool_calls          the answer as tool calls: a list of {index, id?, type?, function: {name?, arguments?}}, the
                        first event of a call naming it, each later one carrying a fragment of its JSON arguments
    function_call       the deprecated single-call form of the same: {name?, arguments?}
    reasoning_content   reasoning text (DeepSeek's API; vLLM before 0.11 with a reasoning parser)
    reasoning           reasoning text (vLLM since 0.11, OpenRouter)

and the completions API in `choices[0].text`. A tool-call event has no `content`, yet it is the model's answer
being generated, one token (or a few) at a time: it counts as a token event, and as the first answer token when
it is the first of its kind. A delta with only `role`, or empty strings, carries no token (vLLM's first chunk
names the role alone). Anything else that breaks the shapes above refuses the request with the JSON path of the
value and what it was, so a broken endpoint's requests are errors that say why, never silently counted.
"""

from __future__ import annotations

from typing import Any

ANSWER = "answer"
REASONING = "reasoning"
REASONING_FIELDS = ("reasoning_content", "reasoning")


class DeltaError(ValueError):
    """The event's choice or delta does not have the shape OpenAI's streaming format gives it (the message says
    where and what)."""


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _text(value: Any, where: str) -> str:
    """A text field of a delta: a string, or null/absent (no text)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise DeltaError(f"malformed delta: {where} is {_shown(value)}, not a string")
    return value


def _function(value: Any, where: str) -> bool:
    """Whether a function-call fragment ({name?, arguments?}) carries any of the call."""
    if value is None:
        return False
    if not isinstance(value, dict):
        raise DeltaError(f"malformed delta: {where} is {_shown(value)}, not an object")
    name, arguments = _text(value.get("name"), f"{where}.name"), _text(value.get("arguments"), f"{where}.arguments")
    return bool(name or arguments)


def _tool_calls(value: Any, where: str) -> bool:
    """Whether a delta's tool_calls carry any of a call; each item must be a call fragment with a whole index."""
    if value is None:
        return False
    if not isinstance(value, list):
        raise DeltaError(f"malformed delta: {where} is {_shown(value)}, not a list of tool calls")
    carried = False
    for i, call in enumerate(value):
        if not isinstance(call, dict):
            raise DeltaError(f"malformed delta: {where}[{i}] is {_shown(call)}, not a tool call object")
        index = call.get("index")
        if index is not None and (not isinstance(index, int) or isinstance(index, bool) or index < 0):
            raise DeltaError(f"malformed delta: {where}[{i}].index is {_shown(index)}, not a whole number >= 0")
        _text(call.get("id"), f"{where}[{i}].id")
        carried = _function(call.get("function"), f"{where}[{i}].function") or bool(call.get("id")) or carried
    return carried


def _delta_kind(delta: Any) -> str | None:
    where = "choices[0].delta"
    if not isinstance(delta, dict):
        raise DeltaError(f"malformed delta: {where} is {_shown(delta)}, not an object")
    content = _text(delta.get("content"), f"{where}.content")
    tools = _tool_calls(delta.get("tool_calls"), f"{where}.tool_calls")
    legacy = _function(delta.get("function_call"), f"{where}.function_call")
    if content or tools or legacy:
        return ANSWER
    if any(_text(delta.get(name), f"{where}.{name}") for name in REASONING_FIELDS):
        return REASONING
    return None


def token_kind(event: dict[str, Any]) -> str | None:
    """ANSWER, REASONING or None (the event carries no token: a role, a usage report, a finish); DeltaError when
    its first choice is malformed. An event carrying both reasoning and answer counts as the answer."""
    choices = event.get("choices")
    if choices is None or choices == []:
        return None
    if not isinstance(choices, list):
        raise DeltaError(f"malformed event: choices is {_shown(choices)}, not a list")
    choice = choices[0]
    if not isinstance(choice, dict):
        raise DeltaError(f"malformed event: choices[0] is {_shown(choice)}, not an object")
    if "delta" in choice:  # chat
        return _delta_kind(choice["delta"])
    return ANSWER if _text(choice.get("text"), "choices[0].text") else None


def answer_text(event: dict[str, Any]) -> str:
    """The answer text an event carries (chat `delta.content` or the completions API's `text`), reasoning and tool
    calls excluded: what a multi-turn session carries to its next turn as the assistant's message. Call it after
    `token_kind` has accepted the event's shape."""
    choices = event.get("choices") or []
    choice = choices[0] if choices else {}
    if "delta" in choice:
        return str(choice["delta"].get("content") or "")
    return str(choice.get("text") or "")
