"""The official `openai` Python client against a running evolve-hud.

Usage: python3 openai_client.py BASE_URL TOKEN. Prints one line per check and
exits non-zero on the first failure.
"""

import json
import re
import sys

import openai

base = sys.argv[1].rstrip("/") + "/v1"
client = openai.OpenAI(base_url=base, api_key=sys.argv[2], max_retries=0, timeout=120)
model = client.models.list().data[0].id
print(f"model: {model}")

# "hi", with every default the client leaves to the server, gets a greeting.
hi = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}], seed=7)
text = hi.choices[0].message.content
print(f"hi: {text!r} ({hi.usage.prompt_tokens} prompt tokens)")
assert re.search(r"\b(hello|hi|hey|greetings|welcome|how can i (help|assist))\b", text, re.I), text

# An error shows its message, not only its status.
try:
    client.chat.completions.create(model=model, messages=[], seed=7)
    raise SystemExit("an empty message list was accepted")
except openai.BadRequestError as e:
    print(f"error: {e.message}")
    assert "messages" in e.message, e.message
    assert e.body and e.body.get("type") == "invalid_request_error", e.body

# Streaming: the chunks add up, and the last says why it stopped.
chunks = list(
    client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": "Name a colour."}],
        max_tokens=16,
        stream=True,
        stream_options={"include_usage": True},
        seed=7,
    )
)
streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
reasons = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
usage = [c.usage for c in chunks if c.usage]
print(f"stream: {streamed!r} finish={reasons} usage={usage[-1].completion_tokens if usage else None}")
assert streamed and reasons and reasons[-1] in ("stop", "length"), chunks
assert usage and usage[-1].completion_tokens > 0

# A JSON schema holds the answer.
schema = {
    "type": "object",
    "properties": {"colour": {"type": "string"}, "count": {"type": "integer"}},
    "required": ["colour", "count"],
    "additionalProperties": False,
}
held = client.chat.completions.create(
    model=model,
    messages=[{"role": "user", "content": "Give a colour and a count as JSON."}],
    response_format={"type": "json_schema", "json_schema": {"name": "pick", "schema": schema, "strict": True}},
    max_tokens=64,
    seed=7,
)
answer = json.loads(held.choices[0].message.content)
print(f"json_schema: {answer}")
assert set(answer) == {"colour", "count"} and isinstance(answer["count"], int), answer
print("ok")
