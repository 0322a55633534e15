"""`ScriptedServer` driven by the real openai SDK over real HTTP on 127.0.0.1, and by the real
anthropic and google-genai SDKs for its Anthropic Messages and Gemini `generateContent` routes.

Clients use `max_retries=0` wherever requests are counted: the openai and anthropic SDKs retry
408/409/429/5xx and connection errors twice by default, with 0.5-8 s backoff (google-genai does
not retry unless given `retry_options`).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import re
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types
from hypothesis import given
from hypothesis import strategies as st

from healjson.testing import RecordedRequest, ScriptedReply, ScriptedServer
from healjson.testing._serve import load_replies
from healjson.testing._wire import anthropic_messages, gemini_generate, openai_chat
from healjson.testing._wire import usage as scripted_usage
from sdk_calls import gemini_client

# the `scripted_server` fixture comes from the plugin registered under the pytest11 entry point

USER = [{"role": "user", "content": "Extract the invoice as JSON."}]


@pytest.fixture
def client(scripted_server: ScriptedServer) -> Iterator[openai.OpenAI]:
    """A real sync SDK client pointed at the fixture server, without retries."""
    with openai.OpenAI(base_url=scripted_server.base_url, api_key="test", max_retries=0) as sdk:
        yield sdk


def _ask(client: openai.OpenAI, **params: Any) -> Any:
    return client.chat.completions.create(model="gpt-test", messages=USER, **params)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# successful replies
# ---------------------------------------------------------------------------------------------


def test_content_round_trips_and_the_request_is_recorded(
    scripted_server: ScriptedServer, client: openai.OpenAI
) -> None:
    """A string item comes back as the assistant content and the request is recorded verbatim."""
    scripted_server.push('{"total": 42}')
    schema = {"type": "object", "properties": {"total": {"type": "integer"}}}
    response_format = {"type": "json_schema", "json_schema": {"name": "inv", "schema": schema}}

    completion = _ask(client, response_format=response_format, max_tokens=64)

    assert '{"total": 42}' == completion.choices[0].message.content
    assert "stop" == completion.choices[0].finish_reason
    assert "assistant" == completion.choices[0].message.role
    assert completion.choices[0].message.refusal is None
    assert "gpt-test" == completion.model
    assert "chat.completion" == completion.object
    assert (7, 3, 10) == (
        completion.usage.prompt_tokens,
        completion.usage.completion_tokens,
        completion.usage.total_tokens,
    )
    [request] = scripted_server.requests
    assert isinstance(request, RecordedRequest)
    assert ("POST", "/v1/chat/completions") == (request.method, request.path)
    assert USER == request.messages
    assert "Extract the invoice as JSON." == request.last_user_text
    assert "gpt-test" == request.body["model"]  # type: ignore[index]
    assert response_format == request.body["response_format"]  # type: ignore[index]
    assert 64 == request.body["max_tokens"]  # type: ignore[index]
    assert "Bearer test" == request.headers["authorization"]
    assert request.body == json.loads(request.raw)
    assert 0 == scripted_server.remaining


def test_tool_calls_round_trip(scripted_server: ScriptedServer, client: openai.OpenAI) -> None:
    """Scripted tool calls reach the SDK as typed tool calls with their arguments string."""
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "extract", "arguments": '{"total": 42}'},
    }
    scripted_server.push(ScriptedReply(tool_calls=[call], finish_reason="tool_calls"))

    message = _ask(client).choices[0]

    assert "tool_calls" == message.finish_reason
    assert message.message.content is None
    [tool_call] = message.message.tool_calls
    assert ("call_1", "extract", '{"total": 42}') == (
        tool_call.id,
        tool_call.function.name,
        tool_call.function.arguments,
    )


@pytest.mark.parametrize("finish_reason", ["length", "content_filter"])
def test_finish_reason_is_passed_through(
    scripted_server: ScriptedServer, client: openai.OpenAI, finish_reason: str
) -> None:
    """A scripted finish_reason such as length or content_filter reaches the SDK unchanged."""
    scripted_server.push(ScriptedReply('{"total": 4', finish_reason=finish_reason))

    choice = _ask(client).choices[0]

    assert (finish_reason, '{"total": 4') == (choice.finish_reason, choice.message.content)


def test_refusal_round_trips(scripted_server: ScriptedServer, client: openai.OpenAI) -> None:
    """A scripted refusal arrives in `message.refusal` with no content."""
    scripted_server.push(ScriptedReply(refusal="I can't help with that."))

    message = _ask(client).choices[0].message

    assert ("I can't help with that.", None) == (message.refusal, message.content)


def test_callable_item_sees_the_request_json(
    scripted_server: ScriptedServer, client: openai.OpenAI
) -> None:
    """A callable item is called with the parsed request body and may return a str or reply."""
    scripted_server.extend(
        [
            lambda request: f"echo: {request['messages'][-1]['content']}",
            lambda request: ScriptedReply(str(request["max_tokens"]), finish_reason="length"),
        ]
    )

    first = _ask(client).choices[0]
    second = _ask(client, max_tokens=7).choices[0]

    assert "echo: Extract the invoice as JSON." == first.message.content
    assert ("7", "length") == (second.message.content, second.finish_reason)


def test_explicit_usage_and_default_model(scripted_server: ScriptedServer) -> None:
    """`usage` overrides the estimate and a request without a model gets the server's model."""
    scripted_server.push(ScriptedReply("{}", usage={"prompt_tokens": 100, "completion_tokens": 5}))
    connection = http.client.HTTPConnection("127.0.0.1", scripted_server.port, timeout=5)
    connection.request("POST", "/chat/completions", body=json.dumps({"messages": USER}))
    payload = json.loads(connection.getresponse().read())
    connection.close()

    assert "scripted-model" == payload["model"]
    assert {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105} == payload["usage"]


def test_models_list(scripted_server: ScriptedServer, client: openai.OpenAI) -> None:
    """`GET /v1/models` lists the server's model and `models.retrieve` echoes the id."""
    assert ["scripted-model"] == [model.id for model in client.models.list()]
    assert "other" == client.models.retrieve("other").id


# ---------------------------------------------------------------------------------------------
# errors, broken bodies, timeouts, retries
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "exception"),
    [
        (500, openai.InternalServerError),
        (503, openai.InternalServerError),
        (429, openai.RateLimitError),
        (401, openai.AuthenticationError),
    ],
)
def test_error_statuses_map_to_sdk_exceptions(
    scripted_server: ScriptedServer,
    client: openai.OpenAI,
    status: int,
    exception: type[openai.APIStatusError],
) -> None:
    """An OpenAI-shaped error reply raises the SDK's exception class for that status."""
    scripted_server.push(ScriptedReply.error(status, "scripted failure"))

    with pytest.raises(exception, match="scripted failure") as caught:
        _ask(client)

    assert status == caught.value.status_code
    assert "scripted failure" == caught.value.body["message"]  # type: ignore[index]
    assert 1 == len(scripted_server.requests)


def test_bad_request_names_the_rejected_parameter(
    scripted_server: ScriptedServer, client: openai.OpenAI
) -> None:
    """A 400 about response_format raises BadRequestError carrying param, type and message."""
    message = (
        "Invalid parameter: 'response_format' of type 'json_schema' is not supported with "
        "this model."
    )
    scripted_server.push(
        ScriptedReply.error(400, message, type="invalid_request_error", param="response_format")
    )

    with pytest.raises(openai.BadRequestError) as caught:
        _ask(client, response_format={"type": "json_schema", "json_schema": {"name": "x"}})

    assert ("response_format", "invalid_request_error") == (caught.value.param, caught.value.type)
    assert message == caught.value.body["message"]  # type: ignore[index]
    assert "response_format" in caught.value.message


def test_non_json_200_body_is_returned_as_text_by_default(
    scripted_server: ScriptedServer, client: openai.OpenAI
) -> None:
    """A text/html 200 makes the non-strict SDK return the raw text (a str), not raise."""
    scripted_server.push(ScriptedReply.non_json())

    # openai 3.x `_response._parse`: content-type not *json -> try .json(), fails -> return text.
    assert "<html>bad gateway</html>" == _ask(client)


def test_non_json_200_body_raises_under_strict_validation(scripted_server: ScriptedServer) -> None:
    """With `_strict_response_validation=True` the same body raises APIResponseValidationError."""
    scripted_server.push(ScriptedReply.non_json())
    with (
        openai.OpenAI(
            base_url=scripted_server.base_url,
            api_key="test",
            max_retries=0,
            _strict_response_validation=True,
        ) as strict,
        pytest.raises(openai.APIResponseValidationError, match="text/html"),
    ):
        _ask(strict)


def test_truncated_json_body_raises_a_plain_json_error(
    scripted_server: ScriptedServer, client: openai.OpenAI
) -> None:
    """A cut-off application/json body escapes the SDK as json.JSONDecodeError, not APIError."""
    scripted_server.push(ScriptedReply(body='{"id": "chatcmpl-1", "choi'))

    with pytest.raises(json.JSONDecodeError):
        _ask(client)


def test_non_json_error_body_keeps_the_text(
    scripted_server: ScriptedServer, client: openai.OpenAI
) -> None:
    """A gateway's HTML 502 raises InternalServerError whose body is the raw text."""
    scripted_server.push(ScriptedReply.non_json("<html>502</html>", status=502))

    with pytest.raises(openai.InternalServerError) as caught:
        _ask(client)

    assert "<html>502</html>" == caught.value.body


def test_slow_reply_times_out_and_stop_is_prompt() -> None:
    """A reply slower than the client timeout raises APITimeoutError; stop() does not wait it."""
    server = ScriptedServer([ScriptedReply.slow("late", delay_s=30.0)]).start()
    try:
        with openai.OpenAI(
            base_url=server.base_url, api_key="test", max_retries=0, timeout=0.2
        ) as sdk:
            started = time.monotonic()
            with pytest.raises(openai.APITimeoutError):
                _ask(sdk)
            assert time.monotonic() - started < 5.0  # the reply would take 30 s
    finally:
        started = time.monotonic()
        server.stop()
        assert time.monotonic() - started < 5.0
    server.stop()  # idempotent


def test_sdk_retries_5xx_and_then_succeeds(scripted_server: ScriptedServer) -> None:
    """With max_retries=2 two 503s are retried (retry-after-ms keeps it fast) until a success."""
    fast_retry = {"retry-after-ms": "1"}
    scripted_server.extend(
        [
            ScriptedReply.error(503, "overloaded", headers=fast_retry),
            ScriptedReply.error(429, "slow down", headers=fast_retry),
            "{}",
        ]
    )
    with openai.OpenAI(base_url=scripted_server.base_url, api_key="test", max_retries=2) as sdk:
        assert "{}" == _ask(sdk).choices[0].message.content

    assert 3 == len(scripted_server.requests)


def test_exhausted_script_answers_500_without_sdk_retries(scripted_server: ScriptedServer) -> None:
    """Past the end of the script the server answers 500 with x-should-retry: false."""
    scripted_server.push("{}")
    with openai.OpenAI(base_url=scripted_server.base_url, api_key="test", max_retries=2) as sdk:
        _ask(sdk)
        with pytest.raises(openai.InternalServerError, match="exhausted") as caught:
            _ask(sdk)

    assert "script_exhausted" == caught.value.code
    assert 2 == len(scripted_server.requests)
    scripted_server.push("again")  # an exhausted request does not use up later items
    with openai.OpenAI(base_url=scripted_server.base_url, api_key="test", max_retries=0) as sdk:
        assert "again" == _ask(sdk).choices[0].message.content


def test_callable_that_raises_answers_500(
    scripted_server: ScriptedServer, client: openai.OpenAI
) -> None:
    """An exception inside a callable item becomes a 500 naming the exception."""

    def broken(request: dict[str, Any]) -> str:
        raise KeyError("nope")

    scripted_server.push(broken)

    with pytest.raises(openai.InternalServerError, match="KeyError"):
        _ask(client)


def test_repeat_mode_cycles_the_script() -> None:
    """With repeat=True the script starts over instead of running out."""
    with (
        ScriptedServer(["a", "b"], repeat=True) as server,
        openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as sdk,
    ):
        contents = [_ask(sdk).choices[0].message.content for _ in range(5)]
        assert 1 == server.remaining

    assert ["a", "b", "a", "b", "a"] == contents


# ---------------------------------------------------------------------------------------------
# streaming and async
# ---------------------------------------------------------------------------------------------


def test_streaming_yields_content_in_chunks(
    scripted_server: ScriptedServer, client: openai.OpenAI
) -> None:
    """`stream=True` yields several content deltas, a finish_reason chunk and a usage chunk."""
    content = '{"total": 42, "currency": "EUR"}'
    scripted_server.push(content)

    chunks = list(_ask(client, stream=True, stream_options={"include_usage": True}))

    choices = [c.choices[0] for c in chunks if c.choices]
    pieces = [choice.delta.content for choice in choices if choice.delta.content]
    assert content == "".join(pieces)
    assert len(pieces) > 2
    assert ["stop"] == [choice.finish_reason for choice in choices if choice.finish_reason]
    assert 8 == chunks[-1].usage.completion_tokens
    assert {"chat.completion.chunk"} == {c.object for c in chunks}


def test_streamed_tool_calls_accumulate(
    scripted_server: ScriptedServer, client: openai.OpenAI
) -> None:
    """The SDK's stream helper reassembles streamed tool-call arguments and refusals."""
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": [1, 2]}'}}
    scripted_server.extend(
        [ScriptedReply(tool_calls=[call], finish_reason="tool_calls"), ScriptedReply(refusal="no")]
    )

    with client.chat.completions.stream(model="m", messages=USER) as stream:  # type: ignore[arg-type]
        final = stream.get_final_completion()
    with client.chat.completions.stream(model="m", messages=USER) as stream:  # type: ignore[arg-type]
        refused = stream.get_final_completion()

    [tool_call] = final.choices[0].message.tool_calls or []
    assert ("c1", "f", '{"a": [1, 2]}') == (
        tool_call.id,
        tool_call.function.name,
        tool_call.function.arguments,
    )
    assert "no" == refused.choices[0].message.refusal


def test_async_client_round_trip_and_stream(scripted_server: ScriptedServer) -> None:
    """The async SDK client gets plain and streamed replies over the same server."""
    scripted_server.extend(["plain", "streamed reply"])

    async def main() -> tuple[str | None, str]:
        async with openai.AsyncOpenAI(
            base_url=scripted_server.base_url, api_key="test", max_retries=0
        ) as sdk:
            plain = await sdk.chat.completions.create(model="m", messages=USER)  # type: ignore[arg-type]
            stream = await sdk.chat.completions.create(model="m", messages=USER, stream=True)  # type: ignore[arg-type]
            text = "".join([c.choices[0].delta.content or "" async for c in stream])
            return plain.choices[0].message.content, text

    assert ("plain", "streamed reply") == asyncio.run(main())


def test_async_client_timeout(scripted_server: ScriptedServer) -> None:
    """A slow reply makes the async client raise APITimeoutError."""
    scripted_server.push(ScriptedReply.slow("late", 30.0))

    async def main() -> None:
        async with openai.AsyncOpenAI(
            base_url=scripted_server.base_url, api_key="test", max_retries=0, timeout=0.2
        ) as sdk:
            await sdk.chat.completions.create(model="m", messages=USER)  # type: ignore[arg-type]

    with pytest.raises(openai.APITimeoutError):
        asyncio.run(main())


# ---------------------------------------------------------------------------------------------
# raw HTTP: keep-alive, 404, malformed bodies
# ---------------------------------------------------------------------------------------------


def test_keep_alive_unknown_paths_and_malformed_bodies() -> None:
    """One connection serves a 404, a 400 for a malformed body and a reply, then stop() is quick."""
    server = ScriptedServer(["ok"]).start()
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        connection.request("POST", "/v1/nope", body=b'{"x": 1}')
        response = connection.getresponse()
        error = json.loads(response.read())["error"]
        assert (404, "unknown_url") == (response.status, error["code"])
        socket_before = connection.sock

        connection.request("POST", "/v1/chat/completions", body=b"{not json")
        response = connection.getresponse()
        assert 400 == response.status
        assert "invalid_request_error" == json.loads(response.read())["error"]["type"]

        connection.request("POST", "/v1/chat/completions", body=json.dumps({"messages": USER}))
        response = connection.getresponse()
        assert "ok" == json.loads(response.read())["choices"][0]["message"]["content"]
        assert socket_before is connection.sock  # still the same keep-alive connection

        malformed = server.requests[1]
        assert (None, b"{not json") == (malformed.body, malformed.raw)
        assert [] == malformed.messages
        assert "" == malformed.last_user_text
    finally:
        started = time.monotonic()
        server.stop()  # the idle keep-alive connection must not block it
        assert time.monotonic() - started < 5.0
        connection.close()


def test_last_user_text_joins_text_parts() -> None:
    """`last_user_text` reads list-of-parts content and skips non-text parts."""
    parts = [{"type": "text", "text": "a"}, {"type": "image_url"}, {"type": "text", "text": "b"}]
    body = {"messages": [{"role": "user", "content": parts}, {"role": "assistant", "content": "x"}]}

    request = RecordedRequest("POST", "/v1/chat/completions", {}, body, b"")

    assert "ab" == request.last_user_text


def test_reply_validation_and_lifecycle_errors() -> None:
    """Impossible statuses and delays are rejected; base_url needs a started server."""
    with pytest.raises(ValueError, match="status"):
        ScriptedReply(status=42)
    with pytest.raises(ValueError, match="delay_s"):
        ScriptedReply(delay_s=-1)
    server = ScriptedServer()
    with pytest.raises(RuntimeError, match="not started"):
        _ = server.base_url
    server.stop()
    with pytest.raises(RuntimeError, match="restarted"):
        server.start()


# ---------------------------------------------------------------------------------------------
# separate-process mode
# ---------------------------------------------------------------------------------------------


def test_reply_file_loading(tmp_path: Path) -> None:
    """A reply file holds strings and ScriptedReply objects; unknown keys are rejected."""
    good = tmp_path / "good.json"
    good.write_text(json.dumps(["a", {"content": "b", "finish_reason": "length"}]))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"contents": "typo"}]))

    assert ["a", ScriptedReply("b", finish_reason="length")] == load_replies(str(good))
    with pytest.raises(SystemExit, match="item 0"):
        load_replies(str(bad))


def test_subprocess_mode_serves_until_sigterm(tmp_path: Path) -> None:
    """`python -m healjson.testing._serve` prints READY, serves, and exits 0 on SIGTERM."""
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(['{"n": 1}', {"content": "cut", "finish_reason": "length"}]))
    process = subprocess.Popen(
        [sys.executable, "-m", "healjson.testing._serve", "--replies", str(replies), "--repeat"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        word, base_url = process.stdout.readline().split()
        assert "READY" == word
        with openai.OpenAI(base_url=base_url, api_key="test", max_retries=0) as sdk:
            choices = [_ask(sdk).choices[0] for _ in range(3)]
        assert ['{"n": 1}', "cut", '{"n": 1}'] == [c.message.content for c in choices]
        assert "length" == choices[1].finish_reason
    finally:
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=5)
    assert (0, "", "") == (process.returncode, stdout, stderr)


# ---------------------------------------------------------------------------------------------
# the same script in Anthropic's and Gemini's wire formats (the real anthropic / google-genai SDKs)
# ---------------------------------------------------------------------------------------------

SYSTEM = "Answer in JSON."
TLS = ssl.create_default_context()  # loaded once: each SDK client would load the CA bundle again


@pytest.fixture
def claude(scripted_server: ScriptedServer) -> Iterator[anthropic.Anthropic]:
    """A real sync anthropic client pointed at the fixture server, without retries."""
    with anthropic.Anthropic(
        base_url=scripted_server.anthropic_base_url,
        api_key="sk-test",
        max_retries=0,
        http_client=anthropic.DefaultHttpxClient(verify=TLS),
    ) as sdk:
        yield sdk


@pytest.fixture
def gemini(scripted_server: ScriptedServer) -> Iterator[genai.Client]:
    """A real sync google-genai client pointed at the fixture server (it does not retry)."""
    options = genai_types.HttpOptions(
        base_url=scripted_server.gemini_base_url,
        timeout=5000,
        client_args={"verify": TLS},
        async_client_args={"ssl": TLS},
    )
    with gemini_client(api_key="test-key", http_options=options) as client:
        yield client


def _claude(client: anthropic.Anthropic, **params: Any) -> anthropic.types.Message:
    return client.messages.create(
        model="claude-test", max_tokens=64, system=SYSTEM, messages=USER, **params
    )


def _gemini(client: genai.Client) -> genai_types.GenerateContentResponse:
    config = genai_types.GenerateContentConfig(system_instruction=SYSTEM)
    return client.models.generate_content(
        model="gemini-test", contents=USER[0]["content"], config=config
    )


def _call(name: str, arguments: str) -> dict[str, Any]:
    return {"id": "call_7", "type": "function", "function": {"name": name, "arguments": arguments}}


def test_anthropic_message_round_trips(
    scripted_server: ScriptedServer, claude: anthropic.Anthropic
) -> None:
    """`/v1/messages` answers an Anthropic `message`; the top-level system counts as prompt."""
    scripted_server.push('{"total": 42}')

    message = _claude(claude)

    assert isinstance(message, anthropic.types.Message)
    assert ["text"] == [block.type for block in message.content]
    assert '{"total": 42}' == message.content[0].text
    assert ("end_turn", None) == (message.stop_reason, message.stop_sequence)
    assert ("claude-test", "assistant", "msg_scripted_1") == (
        message.model,
        message.role,
        message.id,
    )
    prompt = (len(SYSTEM) + len(USER[0]["content"])) // 4
    assert (prompt, 3) == (message.usage.input_tokens, message.usage.output_tokens)
    [request] = scripted_server.requests
    assert ("POST", "/v1/messages") == (request.method, request.path)
    assert (USER, SYSTEM) == (request.messages, request.system)
    assert "Extract the invoice as JSON." == request.last_user_text
    assert "anthropic-version" in request.headers  # the SDK sent it, to the right route


STOPS = {
    "length": ("length", "max_tokens"),
    "content_filter": ("content_filter", "refusal"),
    "passed_through": ("stop_sequence", "stop_sequence"),
}


@pytest.mark.parametrize(("finish_reason", "stop_reason"), STOPS.values(), ids=STOPS.keys())
def test_anthropic_stop_reasons(
    scripted_server: ScriptedServer,
    claude: anthropic.Anthropic,
    finish_reason: str,
    stop_reason: str,
) -> None:
    """OpenAI finish reasons map onto Anthropic's stop reasons; others pass through."""
    scripted_server.push(ScriptedReply('{"total": 4', finish_reason=finish_reason))

    message = _claude(claude)

    assert (stop_reason, '{"total": 4') == (message.stop_reason, message.content[0].text)


def test_anthropic_tool_use_and_refusal(
    scripted_server: ScriptedServer, claude: anthropic.Anthropic
) -> None:
    """Tool calls become `tool_use` blocks (input parsed) and a refusal a `refusal` stop."""
    scripted_server.extend(
        [
            ScriptedReply(tool_calls=[_call("extract", '{"total": 42}')]),
            ScriptedReply(refusal="I can't help with that."),
        ]
    )

    tool = _claude(claude)
    refused = _claude(claude)

    [block] = tool.content
    assert ("tool_use", "call_7", "extract") == (block.type, block.id, block.name)
    assert ({"total": 42}, "tool_use") == (block.input, tool.stop_reason)
    assert ("refusal", []) == (refused.stop_reason, refused.content)
    assert "I can't help with that." == refused.stop_details.explanation


ANTHROPIC_ERRORS = {
    "http_500": (ScriptedReply.error(500, "boom"), anthropic.InternalServerError, "api_error"),
    "http_429": (ScriptedReply.error(429, "slow"), anthropic.RateLimitError, "rate_limit_error"),
    "explicit_type": (
        ScriptedReply.error(529, "busy", type="overloaded_error"),
        anthropic.APIStatusError,
        "overloaded_error",
    ),
}


@pytest.mark.parametrize(
    ("item", "error", "error_type"), ANTHROPIC_ERRORS.values(), ids=ANTHROPIC_ERRORS.keys()
)
def test_anthropic_errors_have_anthropics_shape(
    scripted_server: ScriptedServer,
    claude: anthropic.Anthropic,
    item: ScriptedReply,
    error: type[Exception],
    error_type: str,
) -> None:
    """An error reply's body is `{"type": "error", "error": {"type", "message"}}`."""
    scripted_server.push(item)

    with pytest.raises(error) as caught:
        _claude(claude)

    assert {"type": "error", "error": {"type": error_type, "message": item.content}} == (
        caught.value.body  # type: ignore[attr-defined]
    )


def test_anthropic_unservable_tool_input_answers_500(
    scripted_server: ScriptedServer, claude: anthropic.Anthropic
) -> None:
    """Tool arguments that are not a JSON object cannot be a `tool_use.input`, so a message
    carrying them answers 500 (a broken test, not a retry); a stream sends them as
    `input_json_delta` text (see tests/kit/test_tool_calls_server.py)."""
    scripted_server.push(ScriptedReply(tool_calls=[_call("extract", '{"total": 4,')]))

    with pytest.raises(anthropic.InternalServerError, match="must be a JSON object"):
        _claude(claude)
    assert 0 == scripted_server.remaining
    assert [False] == [request.streamed for request in scripted_server.requests]


def test_gemini_response_round_trips(scripted_server: ScriptedServer, gemini: genai.Client) -> None:
    """`generateContent` answers a Gemini response (camelCase on the wire) that the SDK reads."""
    scripted_server.push(ScriptedReply('{"total": 42}', usage={"prompt_tokens": 9}))

    response = _gemini(gemini)

    assert isinstance(response, genai_types.GenerateContentResponse)
    assert '{"total": 42}' == response.text
    [candidate] = response.candidates or []
    assert genai_types.FinishReason.STOP == candidate.finish_reason
    assert "gemini-test" == response.model_version
    usage = response.usage_metadata
    assert usage is not None
    assert (9, 0, 9) == (
        usage.prompt_token_count,
        usage.candidates_token_count,
        usage.total_token_count,
    )
    [request] = scripted_server.requests
    assert request.path.endswith("/models/gemini-test:generateContent")
    assert "test-key" == request.headers["x-goog-api-key"]
    assert (USER, SYSTEM) == (request.messages, request.system)


def test_gemini_finish_reasons_function_calls_and_refusal(
    scripted_server: ScriptedServer, gemini: genai.Client
) -> None:
    """length -> MAX_TOKENS, content_filter -> SAFETY, tool calls -> functionCall parts, and a
    refusal -> a SAFETY stop without content."""
    scripted_server.extend(
        [
            ScriptedReply('{"total": 4', finish_reason="length"),
            ScriptedReply('{"to', finish_reason="content_filter"),
            ScriptedReply(
                tool_calls=[_call("extract", '{"total": 42}')], finish_reason="tool_calls"
            ),
            ScriptedReply(refusal="no"),
        ]
    )

    cut, filtered, called, refused = (_gemini(gemini) for _ in range(4))

    FinishReason = genai_types.FinishReason
    assert [
        FinishReason.MAX_TOKENS,
        FinishReason.SAFETY,
        FinishReason.STOP,
        FinishReason.SAFETY,
    ] == [(r.candidates or [])[0].finish_reason for r in (cut, filtered, called, refused)]
    assert ('{"total": 4', '{"to') == (cut.text, filtered.text)
    [function_call] = called.function_calls or []
    assert ("extract", {"total": 42}) == (function_call.name, function_call.args)
    assert (refused.candidates or [])[0].content is None


GEMINI_ERRORS = {
    "http_500": (ScriptedReply.error(500, "boom"), genai_errors.ServerError, "INTERNAL"),
    "http_429": (ScriptedReply.error(429, "slow"), genai_errors.ClientError, "RESOURCE_EXHAUSTED"),
    "explicit_status": (
        ScriptedReply.error(400, "no", type="FAILED_PRECONDITION"),
        genai_errors.ClientError,
        "FAILED_PRECONDITION",
    ),
}


@pytest.mark.parametrize(
    ("item", "error", "status"), GEMINI_ERRORS.values(), ids=GEMINI_ERRORS.keys()
)
def test_gemini_errors_have_googles_shape(
    scripted_server: ScriptedServer,
    gemini: genai.Client,
    item: ScriptedReply,
    error: type[genai_errors.APIError],
    status: str,
) -> None:
    """An error reply's body is `{"error": {"code", "message", "status"}}`."""
    scripted_server.push(item)

    with pytest.raises(error) as caught:
        _gemini(gemini)

    assert (item.status, status, item.content) == (
        caught.value.code,
        caught.value.status,
        caught.value.message,
    )


def test_gemini_paths_streaming_and_malformed_bodies(scripted_server: ScriptedServer) -> None:
    """Any API version prefix (or none) is served; `streamGenerateContent` streams SSE events;
    a malformed body is a 400 in Google's shape that takes no item."""
    scripted_server.extend(["s", "a", "b"])
    body = json.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
    connection = http.client.HTTPConnection("127.0.0.1", scripted_server.port, timeout=5)

    def post(path: str, payload: str) -> tuple[int, dict[str, Any]]:
        connection.request("POST", path, body=payload)
        response = connection.getresponse()
        return response.status, json.loads(response.read())

    try:
        connection.request("POST", "/v1beta/models/g:streamGenerateContent?alt=sse", body=body)
        response = connection.getresponse()
        stream_type, raw = response.getheader("Content-Type"), response.read()
        malformed = post("/v1beta/models/g:generateContent", "[1]")
        first = post("/v1beta/models/g%2Dx:generateContent", body)
        second = post("/models/g:generateContent", body)
    finally:
        connection.close()

    events = [json.loads(frame.removeprefix(b"data: ")) for frame in raw.split(b"\r\n\r\n")[:-1]]
    assert str(stream_type).startswith("text/event-stream")
    assert [[{"text": "s"}], None] == [
        event["candidates"][0].get("content", {}).get("parts") for event in events
    ]
    assert "STOP" == events[-1]["candidates"][0]["finishReason"]
    assert (400, 400) == (malformed[0], malformed[1]["error"]["code"])
    assert ["a", "b"] == [
        r[1]["candidates"][0]["content"]["parts"][0]["text"] for r in (first, second)
    ]
    assert ("g-x", "g") == (first[1]["modelVersion"], second[1]["modelVersion"])
    assert [{"role": "user", "content": "hi"}] == scripted_server.requests[-1].messages


def test_one_script_serves_every_wire_format(
    scripted_server: ScriptedServer,
    client: openai.OpenAI,
    claude: anthropic.Anthropic,
    gemini: genai.Client,
) -> None:
    """The three routes take their items from one script, in arrival order."""
    scripted_server.extend(["one", "two", "three"])

    answers = [
        _ask(client).choices[0].message.content,
        _claude(claude).content[0].text,  # type: ignore[union-attr]
        _gemini(gemini).text,
    ]

    assert ["one", "two", "three"] == answers
    assert ["/v1/chat/completions", "/v1/messages"] == [
        r.path for r in scripted_server.requests[:2]
    ]


def test_error_reply_keeps_openais_body_and_rejects_success_statuses(
    scripted_server: ScriptedServer,
) -> None:
    """`ScriptedReply.error` still sends OpenAI's exact error body on the chat route; a status
    below 400 is not an error."""
    scripted_server.push(ScriptedReply.error(400, "bad", param="response_format", code="c1"))
    connection = http.client.HTTPConnection("127.0.0.1", scripted_server.port, timeout=5)
    connection.request("POST", "/v1/chat/completions", body=json.dumps({"messages": USER}))
    raw = connection.getresponse().read()
    connection.close()

    assert {
        "error": {
            "message": "bad",
            "type": "invalid_request_error",
            "param": "response_format",
            "code": "c1",
        }
    } == json.loads(raw)
    with pytest.raises(ValueError, match=">= 400"):
        ScriptedReply.error(200)


def test_recorded_request_reads_every_format() -> None:
    """`messages`, `system` and `last_user_text` for OpenAI, Anthropic and Gemini bodies."""
    openai_body = {"messages": [{"role": "system", "content": "s"}, *USER]}
    anthropic_body = {"system": [{"type": "text", "text": "s"}], "messages": USER}
    gemini_body = {
        "systemInstruction": {"parts": [{"text": "s"}]},
        "contents": [
            {"role": "user", "parts": [{"text": "q"}]},
            {"role": "model", "parts": [{"text": "a"}, {"functionCall": {"name": "f"}}]},
            {"role": "user", "parts": [{"text": "fix "}, {"text": "it"}]},
        ],
    }

    requests = [
        RecordedRequest("POST", "/", {}, body, b"")
        for body in (openai_body, anthropic_body, gemini_body)
    ]

    assert ["s", "s", "s"] == [r.system for r in requests]
    assert [USER[0]["content"], USER[0]["content"], "fix it"] == [
        r.last_user_text for r in requests
    ]
    assert {"role": "assistant", "content": "a"} == requests[2].messages[1]
    assert "" == RecordedRequest("GET", "/", {}, None, b"").system


# ---------------------------------------------------------------------------------------------
# reasoning (chain of thought beside the answer) in the three wire formats
# ---------------------------------------------------------------------------------------------

REASONING = "The invoice lists one line of 42 EUR, so the total is 42."  # 57 chars: 14 tokens
ANSWER = '{"total": 42}'  # 13 chars: 3 tokens


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_openai_message_carries_reasoning_in_the_chosen_field(
    scripted_server: ScriptedServer, client: openai.OpenAI, field: Any
) -> None:
    """The reasoning arrives in `message.<reasoning_field>` and counts inside completion_tokens."""
    scripted_server.push(ScriptedReply(ANSWER, reasoning=REASONING, reasoning_field=field))

    completion = _ask(client)

    message = completion.choices[0].message
    assert (REASONING, ANSWER) == (getattr(message, field), message.content)
    assert {field: REASONING} == message.model_extra
    usage = completion.usage
    assert (7, 3 + 14, 7 + 3 + 14) == (
        usage.prompt_tokens,
        usage.completion_tokens,
        usage.total_tokens,
    )
    assert 14 == usage.completion_tokens_details.reasoning_tokens


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_openai_stream_sends_reasoning_deltas_before_content_deltas(
    scripted_server: ScriptedServer, client: openai.OpenAI, field: Any
) -> None:
    """Streamed, the reasoning comes in several deltas that all precede the content deltas."""
    scripted_server.extend([ScriptedReply(ANSWER, reasoning=REASONING, reasoning_field=field)] * 2)

    chunks = list(_ask(client, stream=True, stream_options={"include_usage": True}))
    with client.chat.completions.stream(model="m", messages=USER) as stream:  # type: ignore[arg-type]
        final = stream.get_final_completion()

    pieces = [
        (key, text)
        for delta in (c.choices[0].delta for c in chunks if c.choices)
        for key, text in ((field, (delta.model_extra or {}).get(field)), ("content", delta.content))
        if text
    ]
    kinds = [key for key, _ in pieces]
    assert [field] * kinds.count(field) + ["content"] * kinds.count("content") == kinds
    assert kinds.count(field) > 1
    assert REASONING == "".join(text for key, text in pieces if key == field)
    assert ANSWER == "".join(text for key, text in pieces if key == "content")
    assert (17, 14) == (
        chunks[-1].usage.completion_tokens,
        chunks[-1].usage.completion_tokens_details.reasoning_tokens,
    )
    assert (REASONING, ANSWER) == (
        getattr(final.choices[0].message, field),
        final.choices[0].message.content,
    )


def test_anthropic_thinking_block_comes_before_the_answer(
    scripted_server: ScriptedServer, claude: anthropic.Anthropic
) -> None:
    """The reasoning is a signed `thinking` block ahead of the text and tool_use blocks."""
    scripted_server.extend(
        [
            ScriptedReply(ANSWER, reasoning=REASONING),
            ScriptedReply(reasoning=REASONING, tool_calls=[_call("extract", ANSWER)]),
        ]
    )

    answered = _claude(claude)
    called = _claude(claude)

    assert ["thinking", "text"] == [block.type for block in answered.content]
    thinking = answered.content[0]
    assert isinstance(thinking, anthropic.types.ThinkingBlock)
    assert REASONING == thinking.thinking
    assert thinking.signature  # opaque, but present as in a real reply
    assert ANSWER == answered.content[1].text  # type: ignore[union-attr]
    assert (10, 3 + 14, 14) == (
        answered.usage.input_tokens,
        answered.usage.output_tokens,
        answered.usage.output_tokens_details.thinking_tokens,  # type: ignore[union-attr]
    )
    assert (["thinking", "tool_use"], "tool_use") == (
        [block.type for block in called.content],
        called.stop_reason,
    )


def test_anthropic_redacted_thinking_block_keeps_its_opaque_data(
    scripted_server: ScriptedServer, claude: anthropic.Anthropic
) -> None:
    """`redacted_thinking` is a block of opaque `data`, after any thinking and before the text."""
    scripted_server.extend(
        [
            ScriptedReply(ANSWER, reasoning=REASONING, redacted_thinking="EmwKAhgBEgy3va3pzix"),
            ScriptedReply(ANSWER, redacted_thinking="EmwKAhgBEgy3va3pzix"),
        ]
    )

    both = _claude(claude)
    redacted_only = _claude(claude)

    assert ["thinking", "redacted_thinking", "text"] == [block.type for block in both.content]
    assert ["redacted_thinking", "text"] == [block.type for block in redacted_only.content]
    block = redacted_only.content[0]
    assert isinstance(block, anthropic.types.RedactedThinkingBlock)
    assert "EmwKAhgBEgy3va3pzix" == block.data
    assert (3, None) == (
        redacted_only.usage.output_tokens,
        redacted_only.usage.output_tokens_details,
    )


def test_gemini_thought_part_comes_before_the_answer(
    scripted_server: ScriptedServer, gemini: genai.Client
) -> None:
    """The reasoning is a `thought: true` part ahead of the answer, in thoughtsTokenCount."""
    scripted_server.push(ScriptedReply(ANSWER, reasoning=REASONING))

    response = _gemini(gemini)

    [candidate] = response.candidates or []
    assert candidate.content is not None
    thought, answer = candidate.content.parts or []
    assert (True, REASONING) == (thought.thought, thought.text)
    assert (None, ANSWER) == (answer.thought, answer.text)
    assert ANSWER == response.text  # the SDK leaves thoughts out of `text`
    usage = response.usage_metadata
    assert usage is not None
    assert (10, 3, 14, 10 + 3 + 14) == (
        usage.prompt_token_count,
        usage.candidates_token_count,
        usage.thoughts_token_count,
        usage.total_token_count,
    )


def test_explicit_reasoning_tokens_map_onto_every_format(
    scripted_server: ScriptedServer,
    client: openai.OpenAI,
    claude: anthropic.Anthropic,
    gemini: genai.Client,
) -> None:
    """An explicit `usage` with `reasoning_tokens` lands in each route's own reasoning field."""
    usage = {"prompt_tokens": 10, "completion_tokens": 20, "reasoning_tokens": 15}
    scripted_server.extend([ScriptedReply(ANSWER, reasoning=REASONING, usage=usage)] * 3)

    openai_usage = _ask(client).usage
    anthropic_usage = _claude(claude).usage
    gemini_usage = _gemini(gemini).usage_metadata

    assert (10, 20, 30, 15) == (
        openai_usage.prompt_tokens,
        openai_usage.completion_tokens,
        openai_usage.total_tokens,
        openai_usage.completion_tokens_details.reasoning_tokens,
    )
    assert (10, 20, 15) == (
        anthropic_usage.input_tokens,
        anthropic_usage.output_tokens,
        anthropic_usage.output_tokens_details.thinking_tokens,  # type: ignore[union-attr]
    )
    assert gemini_usage is not None
    assert (10, 5, 15, 30) == (
        gemini_usage.prompt_token_count,
        gemini_usage.candidates_token_count,
        gemini_usage.thoughts_token_count,
        gemini_usage.total_token_count,
    )


def _wire(scripted_server: ScriptedServer, path: str, body: dict[str, Any]) -> bytes:
    """The raw reply body to one request, OpenAI's `created` timestamp pinned to 0."""
    connection = http.client.HTTPConnection("127.0.0.1", scripted_server.port, timeout=5)
    try:
        connection.request("POST", path, body=json.dumps(body))
        raw = connection.getresponse().read()
    finally:
        connection.close()
    return re.sub(rb'"created": \d+', b'"created": 0', raw)


def test_replies_without_reasoning_are_sent_byte_for_byte_as_before(
    scripted_server: ScriptedServer,
) -> None:
    """Without reasoning every format's JSON is exactly the earlier one: no new (null) keys."""
    call = _call("extract", ANSWER)
    scripted_server.extend(
        [ScriptedReply(ANSWER, tool_calls=[call], reasoning_field="reasoning")] * 3 + ["ok"]
    )
    contents = [{"role": "user", "parts": [{"text": USER[0]["content"]}]}]
    stream_body = {"messages": USER, "stream": True, "stream_options": {"include_usage": True}}

    chat = _wire(scripted_server, "/v1/chat/completions", {"messages": USER})
    message = _wire(scripted_server, "/v1/messages", {"system": SYSTEM, "messages": USER})
    generated = _wire(scripted_server, "/v1beta/models/g:generateContent", {"contents": contents})
    streamed = _wire(scripted_server, "/v1/chat/completions", stream_body)

    expected_chat = {
        "id": "chatcmpl-scripted-1",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted-model",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": ANSWER,
                    "refusal": None,
                    "tool_calls": [call],
                },
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }
    expected_message = {
        "id": "msg_scripted_2",
        "type": "message",
        "role": "assistant",
        "model": "scripted-model",
        "content": [
            {"type": "text", "text": ANSWER},
            {"type": "tool_use", "id": "call_7", "name": "extract", "input": {"total": 42}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 3},
    }
    expected_generated = {
        "candidates": [
            {
                "index": 0,
                "content": {
                    "role": "model",
                    "parts": [
                        {"text": ANSWER},
                        {"functionCall": {"name": "extract", "args": {"total": 42}}},
                    ],
                },
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 3, "totalTokenCount": 10},
        "modelVersion": "g",
        "responseId": "scripted-3",
    }
    head = {
        "id": "chatcmpl-scripted-4",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "scripted-model",
    }

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return {**head, "choices": [choice], "usage": None}

    events = [
        chunk({"role": "assistant", "content": "", "refusal": None}),
        chunk({"content": "o"}),
        chunk({"content": "k"}),
        chunk({}, "stop"),
        {
            **head,
            "choices": [],
            "usage": {"prompt_tokens": 7, "completion_tokens": 0, "total_tokens": 7},
        },
    ]
    expected_stream = "".join(f"data: {json.dumps(event)}\n\n" for event in events)
    assert json.dumps(expected_chat).encode() == chat
    assert json.dumps(expected_message).encode() == message
    assert json.dumps(expected_generated).encode() == generated
    assert (expected_stream + "data: [DONE]\n\n").encode() == streamed


def test_reasoning_fields_are_validated_and_load_from_a_reply_file(tmp_path: Path) -> None:
    """An unknown reasoning_field, or fewer completion than reasoning tokens, is rejected (a
    missing completion count defaults to the reasoning tokens); a reply file may carry the
    reasoning fields."""
    with pytest.raises(ValueError, match="reasoning_field"):
        ScriptedReply("{}", reasoning="r", reasoning_field="thinking")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="completion_tokens includes reasoning_tokens"):
        ScriptedReply("{}", usage={"completion_tokens": 1, "reasoning_tokens": 2})
    only_reasoning = ScriptedReply("{}", usage={"reasoning_tokens": 4})
    assert {
        "reasoning_tokens": 4,
        "prompt_tokens": 0,
        "completion_tokens": 4,
        "total_tokens": 4,
    } == scripted_usage(only_reasoning, 100)
    entry = {
        "content": "{}",
        "reasoning": "think",
        "reasoning_field": "reasoning",
        "redacted_thinking": "opaque",
    }
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps([entry]))

    assert [ScriptedReply(**entry)] == load_replies(str(replies))


@given(
    content=st.none() | st.text(max_size=40),
    reasoning=st.text(max_size=80),
    prompt_chars=st.integers(min_value=0, max_value=400),
)
def test_every_format_reports_the_same_reasoning_usage(
    content: str | None, reasoning: str, prompt_chars: int
) -> None:
    """Whatever the texts, the three formats agree on reasoning and answer tokens, and the
    stream's reasoning deltas rebuild the reasoning before any content delta."""
    reply = ScriptedReply(content, reasoning=reasoning)
    usage = scripted_usage(reply, prompt_chars)

    openai_usage = openai_chat.completion("c", "m", reply, usage)["usage"]
    anthropic_usage = anthropic_messages.message("a", "m", reply, usage)["usage"]
    gemini_usage = gemini_generate.response("g", "m", reply, usage)["usageMetadata"]
    deltas = [
        event["choices"][0]["delta"] for event in openai_chat.stream_events("c", "m", reply, None)
    ]

    reasoning_tokens, answer_tokens = len(reasoning) // 4, len(content or "") // 4
    assert (reasoning_tokens, reasoning_tokens + answer_tokens) == (
        openai_usage["completion_tokens_details"]["reasoning_tokens"],
        openai_usage["completion_tokens"],
    )
    assert (reasoning_tokens, reasoning_tokens + answer_tokens) == (
        anthropic_usage["output_tokens_details"]["thinking_tokens"],
        anthropic_usage["output_tokens"],
    )
    assert (reasoning_tokens, answer_tokens) == (
        gemini_usage["thoughtsTokenCount"],
        gemini_usage["candidatesTokenCount"],
    )
    assert {openai_usage["total_tokens"]} == {
        prompt_chars // 4 + reasoning_tokens + answer_tokens,
        gemini_usage["totalTokenCount"],
    }
    kinds = [
        key for delta in deltas[1:] for key in delta if key in ("reasoning_content", "content")
    ]
    assert sorted(kinds, key=["reasoning_content", "content"].index) == kinds
    assert reasoning == "".join(delta.get("reasoning_content", "") for delta in deltas)
