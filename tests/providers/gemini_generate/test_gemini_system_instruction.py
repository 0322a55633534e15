"""The caller's `system_instruction` on `wrap(genai.Client())`: sent as the bare SDK sends it.

Every form google-genai accepts (a text, texts and parts in a list, a `Part`, a `Content`, their
dict forms, a `File`, image and file parts), in a dict config or a `GenerateContentConfig`,
reaches the wire exactly as the bare SDK sends the same call, on the first call and on every
repair call, sync and through `aio`, streamed and not; a tier that states the schema in the
instruction adds it as a text part of its own, first, beside the caller's parts. The real
SDK over real HTTP to the scripted server; the bodies compared are the server's records.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

import aiohttp
import pytest
from google import genai
from google.genai import types as gt
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Healed
from healjson.testing import ScriptedServer
from pinned import pinned
from sdk_calls import TLS, close_gemini

GOOD = '{"name": "Ann", "age": 31}'
BAD = '{"name": "Ann"}'  # no age: one repair call
PROMPT = "Ann is 31. Extract the person as JSON."
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"


class Person(BaseModel):
    name: str
    age: int


# what the `json_schema` tier adds to the config, given to the bare SDK too
SCHEMA_TIER = {
    "response_mime_type": "application/json",
    "response_json_schema": Person.model_json_schema(),
}

FORMS: dict[str, Callable[[], Any]] = {
    "text": lambda: "Answer in French.",
    "list of texts": lambda: ["Answer in French.", "Never mention prices."],
    "Part": lambda: gt.Part(text="Answer in French."),
    "list of Parts": lambda: [gt.Part(text="Answer in French."), gt.Part(text="No prices.")],
    "Content": lambda: gt.Content(parts=[gt.Part(text="Answer in French."), gt.Part(text="No.")]),
    "Content with role": lambda: gt.Content(role="user", parts=[gt.Part(text="Be terse.")]),
    "Content with image": lambda: gt.Content(
        parts=[gt.Part(text="Use this logo:"), gt.Part.from_bytes(data=PNG, mime_type="image/png")]
    ),
    "texts and an image": lambda: [
        "Use this logo:",
        gt.Part.from_bytes(data=PNG, mime_type="image/png"),
        "Never mention prices.",
    ],
    "file Part": lambda: gt.Part.from_uri(
        file_uri="gs://bucket/a.pdf", mime_type="application/pdf"
    ),
    "File": lambda: gt.File(uri="https://example.test/files/abc", mime_type="application/pdf"),
    "dict Content": lambda: {
        "role": "user",
        "parts": [{"text": "Answer in French."}, {"text": "!"}],
    },
    "dict Part": lambda: {"text": "Answer in French."},
    "list of dict parts": lambda: [
        {"text": "Use this logo:"},
        {"inline_data": {"mime_type": "image/png", "data": PNG}},
    ],
}


def _http(server: ScriptedServer, session: aiohttp.ClientSession | None = None) -> Any:
    return gt.HttpOptions(
        base_url=server.gemini_base_url,
        timeout=10_000,
        client_args={"verify": TLS},
        async_client_args={"ssl": TLS},
        aiohttp_client=session,
    )


def call(
    server: ScriptedServer,
    runner: str,
    streamed: bool,
    *,
    heal: bool,
    json_mode: str = "json_schema",
    **kwargs: Any,
) -> Any:
    """One `generate_content` (`_stream`) call of the bare SDK, or of the wrapped client with
    `response_model=Person` (its outcome), the client closed after."""
    kwargs = {"model": "gemini-test", "contents": PROMPT, **kwargs}
    if heal:
        kwargs["response_model"] = Person
    if runner == "async":

        async def go() -> Any:
            async with aiohttp.ClientSession() as session:
                client = genai.Client(api_key="test-key", http_options=_http(server, session))
                try:
                    if not heal:
                        models = client.aio.models
                        if streamed:
                            async for _ in await models.generate_content_stream(**kwargs):
                                pass
                            return None
                        return await models.generate_content(**kwargs)
                    healed = healjson.wrap(client, json_mode=json_mode).aio.models
                    if streamed:
                        async with healed.generate_content_stream(**kwargs) as stream:
                            async for _ in stream:
                                pass
                        return stream.outcome
                    return await healed.generate_content(**kwargs)
                finally:
                    await client.aio.aclose()
                    client.close()

        return asyncio.run(go())
    client = genai.Client(api_key="test-key", http_options=_http(server))
    try:
        if not heal:
            if streamed:
                for _ in client.models.generate_content_stream(**kwargs):
                    pass
                return None
            return client.models.generate_content(**kwargs)
        models = healjson.wrap(client, json_mode=json_mode).models
        if streamed:
            with models.generate_content_stream(**kwargs) as stream:
                for _ in stream:
                    pass
            return stream.outcome
        return models.generate_content(**kwargs)
    finally:
        close_gemini(client)


def _config(system: Any, kind: str, **fields: Any) -> Any:
    config = {"system_instruction": system, **fields}
    return gt.GenerateContentConfig(**config) if kind == "object" else config


def _bodies(server: ScriptedServer, start: int) -> list[dict[str, Any]]:
    return [request.body or {} for request in server.requests[start:]]


def _with_instruction(bare: dict[str, Any], healed: dict[str, Any]) -> None:
    """`healed` is `bare` with one text part first: healjson's instruction, naming the schema."""
    first, *rest = healed["parts"]
    assert {"text"} == set(first)
    assert '"age"' in first["text"]
    assert bare == {**healed, "parts": rest}


@pytest.fixture(params=["sync", "async"])
def runner(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


# every form through the sync whole call; each other way of calling (async, streamed: the same
# request shaping) with the forms that differ most (a text, parts with an image, a `Content`)
_CROSSED = ("text", "texts and an image", "Content with image")
CALLS = [(form, "sync", False) for form in FORMS] + [
    (form, runner, streamed)
    for form in _CROSSED
    for runner, streamed in (("sync", True), ("async", False), ("async", True))
]
CALL_IDS = [
    f"{form}-{runner}-{'streamed' if streamed else 'whole'}" for form, runner, streamed in CALLS
]


@pytest.mark.parametrize("kind", ["dict", "object"])
@pytest.mark.parametrize(("form", "runner", "streamed"), CALLS, ids=CALL_IDS)
def test_system_instruction_is_sent_as_the_bare_sdk_sends_it(
    scripted_server: ScriptedServer, runner: str, streamed: bool, form: str, kind: str
) -> None:
    """In the `json_schema` tier the healed request is the bare SDK's request for the same
    call, its system instruction included, and a repair call sends the same instruction."""
    scripted_server.extend([GOOD, BAD, GOOD])
    system = FORMS[form]()
    kept = copy.deepcopy(system)

    call(scripted_server, runner, streamed, heal=False, config=_config(system, kind, **SCHEMA_TIER))
    outcome = call(scripted_server, runner, streamed, heal=True, config=_config(system, kind))

    assert isinstance(outcome, Healed)
    assert 2 == outcome.calls
    bare, first, repair = _bodies(scripted_server, 0)
    assert bare == first
    assert bare["systemInstruction"] == repair["systemInstruction"]
    assert bare["generationConfig"] == repair["generationConfig"]
    assert kept == system  # the caller's own object is not altered


@pytest.mark.parametrize("json_mode", ["json_object", "prompt"])
@pytest.mark.parametrize(("form", "runner", "streamed"), CALLS, ids=CALL_IDS)
def test_schema_instruction_is_a_part_beside_the_callers(
    scripted_server: ScriptedServer, runner: str, streamed: bool, form: str, json_mode: str
) -> None:
    """A tier that states the schema in the system instruction sends it as a text part of its
    own, first, and the caller's parts after it as the bare SDK sends them, on every call."""
    scripted_server.extend([GOOD, BAD, GOOD])
    system = FORMS[form]()

    call(scripted_server, runner, streamed, heal=False, config={"system_instruction": system})
    outcome = call(
        scripted_server,
        runner,
        streamed,
        heal=True,
        json_mode=json_mode,
        config={"system_instruction": system},
    )

    assert isinstance(outcome, Healed)
    bare, first, repair = _bodies(scripted_server, 0)
    _with_instruction(bare["systemInstruction"], first["systemInstruction"])
    assert first["systemInstruction"] == repair["systemInstruction"]
    assert bare["contents"] == [{"role": "user", "parts": [{"text": PROMPT}]}]


def structured(server: ScriptedServer, runner: str, heal: bool, config: Any) -> Any:
    """google-genai's own structured call (`config={"response_schema": M}`) of the bare SDK or
    the wrapped client: its response, the client closed after."""
    kwargs = {"model": "gemini-test", "contents": PROMPT, "config": config}
    if runner == "async":

        async def go() -> Any:
            async with aiohttp.ClientSession() as session:
                client = genai.Client(api_key="test-key", http_options=_http(server, session))
                try:
                    models = (healjson.wrap(client) if heal else client).aio.models
                    return await models.generate_content(**kwargs)
                finally:
                    await client.aio.aclose()
                    client.close()

        return asyncio.run(go())
    client = genai.Client(api_key="test-key", http_options=_http(server))
    try:
        return (healjson.wrap(client) if heal else client).models.generate_content(**kwargs)
    finally:
        close_gemini(client)


@pytest.mark.parametrize("form", ["list of texts", "Content with image", "File"])
def test_the_sdks_own_structured_call_sends_the_callers_instruction(
    scripted_server: ScriptedServer, runner: str, form: str
) -> None:
    """With `config={"response_schema": M}` (no `response_model`), the wrapped client's first
    call and its repair call send the caller's system instruction as the bare SDK sends it."""
    scripted_server.extend([GOOD, BAD, GOOD])
    config = {"response_schema": Person, "system_instruction": FORMS[form]()}

    structured(scripted_server, runner, False, config)
    response = structured(scripted_server, runner, True, config)

    assert Person(name="Ann", age=31) == response.parsed
    bare, first, repair = _bodies(scripted_server, 0)
    assert bare == first
    assert bare["systemInstruction"] == repair["systemInstruction"]


def test_records_keep_a_rendering_of_every_part(scripted_server: ScriptedServer) -> None:
    """An attempt's messages hold the caller's system instruction as text: its text parts apart
    by a blank line, an image as a note naming its type."""
    scripted_server.push(GOOD)
    system = FORMS["texts and an image"]()

    outcome = call(scripted_server, "sync", False, heal=True, config={"system_instruction": system})

    assert isinstance(outcome, Healed)
    rendered = outcome.attempts[0].messages[0]
    assert "system" == rendered["role"]
    words, image, rule = rendered["content"].split("\n\n")
    assert ("Use this logo:", "Never mention prices.") == (words, rule)
    assert image.startswith("[inline data: image/png, 16 bytes, sha256 ")


# --- a property over generated forms -----------------------------------------------------------

_TEXTS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
_IMAGES = st.builds(
    lambda data, mime: gt.Part.from_bytes(data=data, mime_type=mime),
    st.binary(min_size=1, max_size=16),
    st.sampled_from(["image/png", "image/jpeg"]),
)
_PARTS = st.one_of(
    _TEXTS,
    _TEXTS.map(lambda text: gt.Part(text=text)),
    _TEXTS.map(lambda text: {"text": text}),
    _IMAGES,
    st.just(gt.Part.from_uri(file_uri="gs://bucket/doc.pdf", mime_type="application/pdf")),
)
_PART_OBJECTS = st.one_of(_TEXTS.map(lambda text: gt.Part(text=text)), _IMAGES)
SYSTEMS = st.one_of(
    _TEXTS,
    _PART_OBJECTS,
    st.lists(_PARTS, min_size=1, max_size=4),
    st.builds(
        lambda parts, role: gt.Content(parts=parts, role=role),
        st.lists(_PART_OBJECTS, min_size=1, max_size=4),
        st.sampled_from([None, "user"]),
    ),
    st.lists(_TEXTS, min_size=1, max_size=3).map(
        lambda texts: {"parts": [{"text": text} for text in texts]}
    ),
)


@pinned(max_examples=12)
@given(system=SYSTEMS, json_mode=st.sampled_from(["json_schema", "json_object", "prompt"]))
def test_any_system_instruction_reaches_the_wire_as_given(
    shared_server: ScriptedServer, system: Any, json_mode: str
) -> None:
    """Whatever form of system instruction google-genai accepts, the healed request carries it
    as the bare SDK does: unchanged, or after healjson's own instruction part in a tier that
    states the schema in it."""
    start = len(shared_server.requests)
    shared_server.extend([GOOD, GOOD])
    config = {"system_instruction": system}

    call(shared_server, "sync", False, heal=False, config=config)
    outcome = call(shared_server, "sync", False, heal=True, json_mode=json_mode, config=config)

    assert isinstance(outcome, Healed)
    bare, healed = _bodies(shared_server, start)
    if json_mode == "json_schema":
        assert bare["systemInstruction"] == healed["systemInstruction"]
    else:
        _with_instruction(bare["systemInstruction"], healed["systemInstruction"])
