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

import base64
import contextlib
import email.utils
import http.client
import json
import os
import random
import re
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
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
TIMEOUT = 60.0  # seconds: the wall-clock deadline of one attempt, connect to last byte
MAX_REPLY_BYTES = 1_048_576  # a chat completion holding one grade is a few kB; 1 MiB leaves room for reasoning
EXCERPT_CHARS = 120  # of an error body, after key-like runs are removed
_KEY_LIKE = re.compile(r"[A-Za-z0-9+/=_\-.:]{16,}")  # keys, their reversal, base64 or hex of them: long runs


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are refused: urllib would resend the Authorization header to wherever it is sent."""

    def redirect_request(self, *args, **kwargs) -> None:
        return None


class _Watchdog:
    """Shuts a request's socket at a wall-clock deadline, so neither a slow server nor a trickling reply
    outlasts it (a socket timeout only bounds each read)."""

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds
        self.fired = False
        self._timer: threading.Timer | None = None

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def arm(self, sock: socket.socket) -> None:
        self._timer = threading.Timer(self.remaining(), self._fire, (sock,))
        self._timer.daemon = True
        self._timer.start()

    def _fire(self, sock: socket.socket) -> None:
        self.fired = True
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()


def _watched(base: type[http.client.HTTPConnection], watchdog: _Watchdog) -> type[http.client.HTTPConnection]:
    """`base` whose socket the watchdog shuts at its deadline, armed as soon as it is connected."""

    class Watched(base):  # type: ignore[valid-type,misc]
        def connect(self) -> None:
            super().connect()
            watchdog.arm(self.sock)

    return Watched


class _HTTP(urllib.request.HTTPHandler):
    def __init__(self, watchdog: _Watchdog) -> None:
        super().__init__()
        self.watchdog = watchdog

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_watched(http.client.HTTPConnection, self.watchdog), req)


class _HTTPS(urllib.request.HTTPSHandler):
    def __init__(self, watchdog: _Watchdog) -> None:
        super().__init__()
        self.watchdog = watchdog

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_watched(http.client.HTTPSConnection, self.watchdog), req, context=self._context)  # type: ignore[attr-defined]  # set by HTTPSHandler, untyped


class _Counter:
    """A thread-safe count of requests sent."""

    def __init__(self) -> None:
        self.lock, self.value = threading.Lock(), 0

    def add(self) -> None:
        with self.lock:
            self.value += 1


class ReplyTooLarge(Exception):
    """The reply passed max_reply_bytes: reading stops there."""


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
    delay = min(MAX_DELAY, BASE_DELAY * 2**attempt)
    return delay / 2 + rng.uniform(0, delay / 2)


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
    _sent: _Counter = field(default_factory=_Counter, repr=False, compare=False)

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

    def _attempt(self, body: bytes, headers: dict[str, str], seconds: float) -> dict:
        """One request within `seconds` of wall-clock time, its reply read up to max_reply_bytes."""
        watchdog = _Watchdog(seconds)
        opener = urllib.request.build_opener(_NoRedirect, _HTTP(watchdog), _HTTPS(watchdog))
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        self._sent.add()
        try:
            with opener.open(request, timeout=seconds) as response:
                data = _read_capped(response, self.max_reply_bytes)
            if watchdog.fired:  # the socket was shut mid-reply: what arrived is cut short
                raise TimeoutError(f"no complete reply within {self.timeout:g} s")
            return json.loads(data.decode("utf-8"))
        except (OSError, http.client.HTTPException) as exc:
            if watchdog.fired and not isinstance(exc, urllib.error.HTTPError):
                raise TimeoutError(f"no complete reply within {self.timeout:g} s") from None
            if isinstance(exc, http.client.HTTPException):
                raise ConnectionError(f"broken reply ({type(exc).__name__})") from None
            raise
        finally:
            watchdog.cancel()

    def _post(self, body: bytes) -> dict:
        """The response JSON; retried on 429, 5xx, timeouts and dropped connections, up to `attempts` tries,
        all within attempts × timeout of wall-clock time (a back-off wait that would pass it fails the pair)."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        budget_end = time.monotonic() + self.attempts * self.timeout
        last = ""
        for attempt in range(self.attempts):
            wait = None
            try:
                return self._attempt(body, headers, min(self.timeout, max(0.001, budget_end - time.monotonic())))
            except ReplyTooLarge:
                raise JudgeFailed(
                    f"{self.url} sent a reply larger than {self.max_reply_bytes} bytes (--max-reply-bytes)"
                ) from None
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
                pause = wait if wait is not None else backoff(attempt, self.rng)
                if time.monotonic() + pause >= budget_end:
                    raise JudgeFailed(
                        f"{last} after {attempt + 1} attempt(s); waiting {pause:.0f} s more would "
                        f"pass the pair's {self.attempts * self.timeout:g} s budget"
                    )
                self.sleep(pause)
        raise JudgeFailed(f"{last} after {self.attempts} attempt(s)")


def _refusal(url: str, exc: urllib.error.HTTPError, key: str | None) -> str:
    """Why the endpoint refused, without anything that could echo the key (auth errors show no body)."""
    if 300 <= exc.code < 400:
        return f"{url} redirects elsewhere (HTTP {exc.code}); give the final URL as --base-url"
    if exc.code in (401, 403):
        return (
            f"{url} answered HTTP {exc.code}: the API key was refused or is missing "
            f"(set {KEY_NAMES[0]} or {KEY_NAMES[1]})"
        )
    try:
        detail = excerpt(exc.read(4 * EXCERPT_CHARS).decode("utf-8", "replace"), key)
    except (OSError, http.client.HTTPException):
        detail = ""
    return f"{url} answered HTTP {exc.code}" + (f": {detail}" if detail else "")


def redact(text: str, key: str | None) -> str:
    """`text` with the key, and the key reversed, base64'd or hex'd, replaced by `[…]`: what a reply says is
    kept (judge_calls) and shown, and a model that echoes the key it was sent must not get it stored."""
    if not key:
        return text
    raw = key.encode("utf-8")
    forms = {key, key[::-1], base64.b64encode(raw).decode().rstrip("="), raw.hex(), raw.hex().upper()}
    for form in sorted(forms, key=len, reverse=True):
        if len(form) >= 8:
            text = text.replace(form, "[…]")
    return text


def excerpt(body: str, key: str | None = None) -> str:
    """At most EXCERPT_CHARS of an error body on one line, with the key and every run of 16 or more key-like
    characters (a key reversed, base64'd or hex'd is one) replaced by `[…]`."""
    text = body.replace(key, "[…]") if key else body
    text = _KEY_LIKE.sub("[…]", text)
    text = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return text[:EXCERPT_CHARS] + ("…" if len(text) > EXCERPT_CHARS else "")


def _read_capped(response: http.client.HTTPResponse, cap: int) -> bytes:
    """The reply's bytes, or ReplyTooLarge as soon as more than `cap` arrive (or are announced)."""
    announced = response.headers.get("Content-Length")
    if announced and announced.strip().isdigit() and int(announced) > cap:
        raise ReplyTooLarge
    chunks, size = [], 0
    while chunk := response.read(min(65536, cap + 1 - size)):
        size += len(chunk)
        if size > cap:
            raise ReplyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _answer(data: dict) -> Answer:
    """The message text and token usage of a chat completion (JudgeFailed when it is not one)."""
    try:
        text = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise JudgeFailed("the response is not a chat completion (no choices[0].message.content)") from None
    usage = data.get("usage") or {}
    return Answer(str(text or ""), int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))
