"""A model judge behind any OpenAI-compatible chat-completions endpoint (vLLM, llama.cpp server, Ollama, hosted
APIs): POST {base_url}/chat/completions with the prompt of eval_core.judges.prompt, retried with exponential
back-off and jitter on 429, 5xx and timeouts (Retry-After honoured), standard library only.

The API key comes only from the environment (QRELKIT_JUDGE_API_KEY, else OPENAI_API_KEY) or, inside the app,
Streamlit secrets; it goes into the Authorization header and nowhere else: not into the store, a log line, an
error message or a report.
"""

from __future__ import annotations

import email.utils
import json
import os
import random
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from annotator.judge_run import JudgeFailed
from eval_core.judges.prompt import Answer, check_template, prompt_version, render

KEY_NAMES = ("QRELKIT_JUDGE_API_KEY", "OPENAI_API_KEY")
RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
FATAL_STATUS = frozenset({401, 403, 404})  # wrong key, URL or model: every other call would fail the same way
ATTEMPTS = 5
BASE_DELAY = 0.5  # seconds before the first retry; doubled each time, capped at MAX_DELAY
MAX_DELAY = 30.0
MAX_RETRY_AFTER = 300.0  # a server asking for a longer pause than this is refused the wait


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are refused: urllib would resend the Authorization header to wherever it is sent."""

    def redirect_request(self, *args, **kwargs) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


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


def retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds a Retry-After header asks for (delta-seconds or an HTTP date), None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def backoff(attempt: int, rng: random.Random) -> float:
    """Exponential back-off with jitter: half the capped delay plus a random share of the other half."""
    delay = min(MAX_DELAY, BASE_DELAY * 2 ** attempt)
    return delay / 2 + rng.uniform(0, delay / 2)


@dataclass(frozen=True)
class ChatJudge:
    """judge(query, fragment, guideline) -> Answer for annotator.judge_run.prejudge, over chat completions."""

    base_url: str
    model: str
    template: str
    labels: Mapping[int, str]
    params: Mapping = field(default_factory=lambda: {"temperature": 0.0})
    timeout: float = 60.0
    attempts: int = ATTEMPTS
    api_key: str | None = field(default=None, repr=False)
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False, compare=False)
    rng: random.Random = field(default_factory=random.Random, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"base URL must start with http:// or https://, got {self.base_url!r}")
        if self.attempts < 1 or not self.timeout > 0:
            raise ValueError("attempts must be at least 1 and the timeout positive")
        check_template(self.template)

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
        body = json.dumps({"model": self.model, "messages": [{"role": "user", "content": prompt}],
                           **self.params}).encode("utf-8")
        return _answer(self._post(body))

    def _post(self, body: bytes) -> dict:
        """The response JSON; retried on 429, 5xx, timeouts and dropped connections, up to `attempts` tries."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last = ""
        for attempt in range(self.attempts):
            wait = None
            try:
                request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
                with _OPENER.open(request, timeout=self.timeout) as response:
                    return json.loads(response.read().decode("utf-8"))
            except urllib.error.HTTPError as exc:
                if exc.code in FATAL_STATUS or 300 <= exc.code < 400:
                    raise EndpointError(_refusal(self.url, exc, self.api_key)) from None
                if exc.code not in RETRY_STATUS:  # e.g. 400 for a prompt longer than the model's context
                    raise JudgeFailed(_refusal(self.url, exc, self.api_key)) from None
                last = f"HTTP {exc.code}"
                wait = retry_after(exc.headers.get("Retry-After"))
                if wait is not None and wait > MAX_RETRY_AFTER:
                    raise JudgeFailed(f"{last}; the server asks to wait {wait:.0f} s") from None
            except (TimeoutError, urllib.error.URLError, ConnectionError) as exc:
                reason = getattr(exc, "reason", exc)
                if isinstance(reason, ConnectionRefusedError) and attempt + 1 == self.attempts:
                    raise EndpointError(f"cannot reach {self.url}: connection refused") from None
                last = "timed out" if isinstance(reason, TimeoutError) else f"connection error ({reason})"
            except (json.JSONDecodeError, UnicodeDecodeError):
                raise JudgeFailed(f"{self.url} answered with something other than JSON") from None
            if attempt + 1 < self.attempts:
                self.sleep(wait if wait is not None else backoff(attempt, self.rng))
        raise JudgeFailed(f"{last} after {self.attempts} attempt(s)")


def _refusal(url: str, exc: urllib.error.HTTPError, key: str | None) -> str:
    """Why the endpoint refused, without anything that could echo the key (auth errors show no body)."""
    if 300 <= exc.code < 400:
        return f"{url} redirects elsewhere (HTTP {exc.code}); give the final URL as --base-url"
    if exc.code in (401, 403):
        return (f"{url} answered HTTP {exc.code}: the API key was refused or is missing "
                f"(set {KEY_NAMES[0]} or {KEY_NAMES[1]})")
    try:
        detail = exc.read().decode("utf-8", "replace").strip()[:300]
    except OSError:
        detail = ""
    if key:
        detail = detail.replace(key, "***")
    return f"{url} answered HTTP {exc.code}" + (f": {detail}" if detail else "")


def _answer(data: dict) -> Answer:
    """The message text and token usage of a chat completion (JudgeFailed when it is not one)."""
    try:
        text = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise JudgeFailed("the response is not a chat completion (no choices[0].message.content)") from None
    usage = data.get("usage") or {}
    return Answer(str(text or ""), int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))
