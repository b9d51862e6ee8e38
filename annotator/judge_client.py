"""A model judge behind any OpenAI-compatible chat-completions endpoint (vLLM, llama.cpp server, Ollama, hosted
APIs): POST {base_url}/chat/completions with the prompt of eval_core.judges.prompt, retried with exponential
back-off and jitter on 429, 5xx and timeouts (Retry-After honoured), standard library only.

Every attempt has a wall-clock deadline (`timeout`: a watchdog shuts the socket, so a reply that trickles a
byte a second ends there) and a reply-size cap (`max_reply_bytes`); a pair's attempts and back-off waits
together stay within attempts × timeout. Error bodies are shown only as a short excerpt with anything key-like
removed.

The API key comes only from the environment (QRELKIT_JUDGE_API_KEY, else OPENAI_API_KEY) or, inside the app,
Streamlit secrets; it goes into the Authorization header and nowhere else: not into the store, a log line, an
error message or a report.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from annotator.bounded_http import Counter, Endpoint, Failed, Fatal, Hints, redact
from annotator.judge_run import JudgeFailed
from eval_core.judges.prompt import Answer, check_template, prompt_version, render

KEY_NAMES = ("QRELKIT_JUDGE_API_KEY", "OPENAI_API_KEY")
ATTEMPTS = 5
TIMEOUT = 60.0  # seconds: the wall-clock deadline of one attempt, connect to last byte
MAX_REPLY_BYTES = 1_048_576  # a chat completion holding one grade is a few kB; 1 MiB leaves room for reasoning
HINTS = Hints(
    cap_option="--max-reply-bytes",
    url_advice="give the final URL as --base-url",
    auth_advice=f"the API key was refused or is missing (set {KEY_NAMES[0]} or {KEY_NAMES[1]})",
    budget_of="pair",
)


class EndpointError(RuntimeError):
    """The endpoint refused in a way no retry or other pair can fix (wrong key, URL or model, nothing listening):
    the run stops, keeping the grades written so far."""


def api_key() -> str | None:
    """The key from QRELKIT_JUDGE_API_KEY, else OPENAI_API_KEY, else (inside the app) Streamlit secrets; None
    for local servers that need none."""
    return _find_key()[0]


def key_source() -> str | None:
    """Where api_key() finds the key (a variable name, or "Streamlit secrets"), never the key itself."""
    return _find_key()[1]


def _find_key() -> tuple[str | None, str | None]:
    for name in KEY_NAMES:
        value = os.environ.get(name, "").strip()
        if value:
            return value, name
    if "streamlit" not in sys.modules:  # the CLI never imports Streamlit (nor reads its secrets file)
        return None, None
    import streamlit as st

    try:
        for name in KEY_NAMES:
            if name in st.secrets and str(st.secrets[name]).strip():
                return str(st.secrets[name]).strip(), "Streamlit secrets"
    except FileNotFoundError:  # no secrets.toml
        pass
    return None, None


@dataclass(frozen=True)
class ChatJudge:
    """judge(query, fragment, guideline) -> Answer for annotator.judge_run.prejudge, over chat completions."""

    base_url: str
    model: str
    template: str
    labels: Mapping[int, str]
    params: Mapping = field(default_factory=lambda: {"temperature": 0.0})
    timeout: float = TIMEOUT
    attempts: int = ATTEMPTS
    max_reply_bytes: int = MAX_REPLY_BYTES
    api_key: str | None = field(default=None, repr=False)
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False, compare=False)
    rng: random.Random = field(default_factory=random.Random, repr=False, compare=False)
    _sent: Counter = field(default_factory=Counter, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"base URL must start with http:// or https://, got {self.base_url!r}")
        if self.attempts < 1 or not self.timeout > 0 or self.max_reply_bytes < 1:
            raise ValueError("attempts and the reply cap must be at least 1 and the timeout positive")
        check_template(self.template)

    def requests_sent(self) -> int:
        """Requests sent so far, retries included (what the endpoint received, for the run's report)."""
        return self._sent.value

    @property
    def prompt_version(self) -> str:
        """The template's version, stamped on every grade this judge gives."""
        return prompt_version(self.template)

    @property
    def url(self) -> str:
        """Where requests go: {base_url}/chat/completions."""
        return self.base_url.rstrip("/") + "/chat/completions"

    def __call__(self, query: str, fragment: str, guideline: str) -> Answer:
        prompt = render(self.template, query, fragment, guideline, self.labels)
        body = json.dumps(
            {"model": self.model, "messages": [{"role": "user", "content": prompt}], **self.params}
        ).encode("utf-8")
        answer = _answer(self._post(body))
        return replace(answer, text=redact(answer.text, self.api_key))

    def _post(self, body: bytes) -> dict:
        """The response JSON, within annotator.bounded_http's bounds (deadline, reply cap, retries within
        attempts × timeout): a refusal no retry can fix is EndpointError, any other failure JudgeFailed."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        endpoint = Endpoint(
            self.url,
            HINTS,
            self.timeout,
            self.attempts,
            self.max_reply_bytes,
            secrets=(self.api_key,) if self.api_key else (),
            sleep=self.sleep,
            rng=self.rng,
            sent=self._sent,
        )
        try:
            return endpoint.request_json(body, headers)
        except Fatal as exc:
            raise EndpointError(str(exc)) from None
        except Failed as exc:
            raise JudgeFailed(str(exc)) from None


def _answer(data: dict) -> Answer:
    """The message text and token usage of a chat completion (JudgeFailed when it is not one)."""
    try:
        text = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise JudgeFailed("the response is not a chat completion (no choices[0].message.content)") from None
    usage = data.get("usage") or {}
    return Answer(str(text or ""), int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))
