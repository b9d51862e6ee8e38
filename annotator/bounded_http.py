"""Bounded HTTP for the clients that call someone else's server (the model judge, the live search engine):
standard library only, every attempt within a wall-clock deadline (a watchdog shuts the socket, so a reply that
trickles a byte a second ends there), every reply within a size cap, retries with exponential back-off and
jitter on 408, 429 and 5xx (Retry-After honoured), redirects refused, and error bodies shown only as a short
excerpt with every credential and anything key-like removed.

`Endpoint.request_json` is the one retry loop; it raises `Fatal` when no retry or other request can fix it
(wrong key or URL, nothing listening) and `Failed` when this request could not be answered. Each client turns
them into its own errors and names its own options in `Hints`.
"""

from __future__ import annotations

import base64
import contextlib
import email.utils
import http.client
import json
import random
import re
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
FATAL_STATUS = frozenset({401, 403, 404})  # wrong key, URL or model: every other call would fail the same way
BASE_DELAY = 0.5  # seconds before the first retry; doubled each time, capped at MAX_DELAY
MAX_DELAY = 30.0
MAX_RETRY_AFTER = 300.0  # a server asking for a longer pause than this is refused the wait
EXCERPT_CHARS = 120  # of an error body, after key-like runs are removed
# keys, their reversal, base64 or hex of them: long runs holding a digit or a capital (a lower-case identifier
# such as an engine's `parsing_exception` or a model server's `context_length_exceeded` is kept: it says why)
_KEY_LIKE = re.compile(r"[A-Za-z0-9+/=_\-.:]{16,}")
_KEY_MARK = re.compile(r"[0-9A-Z]")


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


class Counter:
    """A thread-safe count of requests sent."""

    def __init__(self) -> None:
        self.lock, self.value = threading.Lock(), 0

    def add(self) -> None:
        with self.lock:
            self.value += 1


class ReplyTooLarge(Exception):
    """The reply passed the reply cap: reading stops there."""


class Fatal(RuntimeError):
    """The endpoint refused in a way no retry or other request can fix (wrong key or URL, nothing listening)."""


class Failed(RuntimeError):
    """This request got no usable answer (retries spent, a 4xx, not JSON, too large)."""


@dataclass(frozen=True)
class Hints:
    """What a client's errors advise: the option that sets the reply cap, how to give the final URL, how to set
    the credentials, and what one request's time budget belongs to (a pair, a query)."""

    cap_option: str
    url_advice: str
    auth_advice: str
    budget_of: str


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


def redact(text: str, *keys: str | None) -> str:
    """`text` with each key, and each key reversed, base64'd or hex'd, replaced by `[…]`: what a reply says may
    be kept and shown, and a server that echoes the credential it was sent must not get it stored."""
    for key in keys:
        if not key:
            continue
        raw = key.encode("utf-8")
        forms = {key, key[::-1], base64.b64encode(raw).decode().rstrip("="), raw.hex(), raw.hex().upper()}
        for form in sorted(forms, key=len, reverse=True):
            if len(form) >= 8:
                text = text.replace(form, "[…]")
    return text


def excerpt(body: str, *keys: str | None) -> str:
    """At most EXCERPT_CHARS of an error body on one line, with the keys (also reversed, base64'd or hex'd) and
    every run of 16 or more key-like characters holding a digit or a capital replaced by `[…]`."""
    text = redact(body, *keys)
    for key in keys:
        if key:
            text = text.replace(key, "[…]")
    text = _KEY_LIKE.sub(lambda m: "[…]" if _KEY_MARK.search(m.group()) else m.group(), text)
    text = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return text[:EXCERPT_CHARS] + ("…" if len(text) > EXCERPT_CHARS else "")


def read_capped(response: http.client.HTTPResponse, cap: int) -> bytes:
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


@dataclass(frozen=True)
class Endpoint:
    """One server's bounds: `url` is what errors name, `secrets` what they must never show."""

    url: str
    hints: Hints
    timeout: float
    attempts: int
    max_reply_bytes: int
    secrets: tuple[str, ...] = field(default=(), repr=False)
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    rng: random.Random = field(default_factory=random.Random, repr=False)
    sent: Counter = field(default_factory=Counter, repr=False)

    def _attempt(self, request: urllib.request.Request, seconds: float) -> Any:
        """One request within `seconds` of wall-clock time, its reply read up to max_reply_bytes, as JSON."""
        watchdog = _Watchdog(seconds)
        opener = urllib.request.build_opener(_NoRedirect, _HTTP(watchdog), _HTTPS(watchdog))
        self.sent.add()
        try:
            with opener.open(request, timeout=seconds) as response:
                data = read_capped(response, self.max_reply_bytes)
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

    def request_json(
        self, body: bytes | None, headers: dict[str, str], *, method: str = "POST", url: str | None = None
    ) -> Any:
        """The reply's JSON; retried on 408, 429, 5xx, timeouts and dropped connections, up to `attempts` tries,
        all within attempts × timeout of wall-clock time (a back-off wait that would pass it fails the request).
        `url` is where to send it when it differs from the one errors name (a query in its query string)."""
        budget_end = time.monotonic() + self.attempts * self.timeout
        last = ""
        for attempt in range(self.attempts):
            wait = None
            request = urllib.request.Request(url or self.url, data=body, headers=headers, method=method)
            try:
                return self._attempt(request, min(self.timeout, max(0.001, budget_end - time.monotonic())))
            except ReplyTooLarge:
                raise Failed(
                    f"{self.url} sent a reply larger than {self.max_reply_bytes} bytes ({self.hints.cap_option})"
                ) from None
            except urllib.error.HTTPError as exc:
                if exc.code in FATAL_STATUS or 300 <= exc.code < 400:
                    raise Fatal(self._refusal(exc)) from None
                if exc.code not in RETRY_STATUS:  # e.g. 400 for a request the server cannot parse
                    raise Failed(self._refusal(exc)) from None
                last = f"HTTP {exc.code}"
                wait = retry_after(exc.headers.get("Retry-After"))
                if wait is not None and wait > MAX_RETRY_AFTER:
                    raise Failed(f"{last}; the server asks to wait {wait:.0f} s") from None
            except (TimeoutError, urllib.error.URLError, ConnectionError) as exc:
                reason = getattr(exc, "reason", exc)
                if isinstance(reason, ConnectionRefusedError) and attempt + 1 == self.attempts:
                    raise Fatal(f"cannot reach {self.url}: connection refused") from None
                last = "timed out" if isinstance(reason, TimeoutError) else f"connection error ({reason})"
            except (json.JSONDecodeError, UnicodeDecodeError):
                raise Failed(f"{self.url} answered with something other than JSON") from None
            if attempt + 1 < self.attempts:
                pause = wait if wait is not None else backoff(attempt, self.rng)
                if time.monotonic() + pause >= budget_end:
                    raise Failed(
                        f"{last} after {attempt + 1} attempt(s); waiting {pause:.0f} s more would "
                        f"pass the {self.hints.budget_of}'s {self.attempts * self.timeout:g} s budget"
                    )
                self.sleep(pause)
        raise Failed(f"{last} after {self.attempts} attempt(s)")

    def _refusal(self, exc: urllib.error.HTTPError) -> str:
        """Why the endpoint refused, without anything that could echo a credential (auth errors show no body)."""
        if 300 <= exc.code < 400:
            return f"{self.url} redirects elsewhere (HTTP {exc.code}); {self.hints.url_advice}"
        if exc.code in (401, 403):
            return f"{self.url} answered HTTP {exc.code}: {self.hints.auth_advice}"
        try:
            detail = excerpt(exc.read(4 * EXCERPT_CHARS).decode("utf-8", "replace"), *self.secrets)
        except (OSError, http.client.HTTPException):
            detail = ""
        return f"{self.url} answered HTTP {exc.code}" + (f": {detail}" if detail else "")
