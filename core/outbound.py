"""Requests to servers whose address a user typed in: which may be reached, and how failures read.

- Forms and models: ``base_url_problem(url)`` and ``api_key_env_problem(name)`` give a message
  to show, or None when the value may be saved.
- Clients: ``httpx.AsyncClient(transport=guarded_async_transport())`` (sync callers:
  ``guarded_transport()``). Every new connection resolves the host itself, checks every address
  with ``address_problem`` and connects to the checked address, so a name cannot point somewhere
  else between the check and the connection; TLS still verifies the name in the URL. A refused
  address raises ``OutboundRefused`` (an ``httpx.ConnectError``) before any packet is sent.
- Job cards: ``upstream_error_text`` for an answer that is not a success, and
  ``connection_error_text`` for an exception of the request; neither shows the body of an
  answer nor tells a closed port from an open one.

Settings: ``OUTBOUND_ALLOW_PRIVATE`` (private and loopback addresses allowed; never link-local,
metadata and the like), ``OUTBOUND_KEY_ENV_PREFIXES`` and ``OUTBOUND_KEY_ENV_NAMES`` (which
environment variables may hold an API key). They are read from Django's settings once a process
has loaded them, without importing Django here: the judge client, a pure module (the import
contracts in pyproject.toml), uses this one. A process that never loads Django's settings gets
the defaults: public addresses only, keys from ``JUDGE_KEY_*`` variables.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import re
import socket
import ssl
import sys
import time
import unicodedata
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import Any

import anyio
import httpcore
import httpx

from core.text import counted

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

#: The longest upstream error message shown, in characters.
MESSAGE_SHOWN_CHARS = 300
_JSON_READ_MAX_BYTES = 64_000
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MEDIA_TYPE = re.compile(r"[a-z0-9!#$&^_.+-]{1,60}/[a-z0-9!#$&^_.+-]{1,60}")
_LEGACY_IPV4 = re.compile(r"(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}\.?")
_ALLOW_PRIVATE_HINT = (
    "an operator allows private and loopback addresses with OUTBOUND_ALLOW_PRIVATE=1"
)


class OutboundRefused(httpx.ConnectError):
    """A connection the address policy refused; its message names the class of the address."""


# --- Address policy -------------------------------------------------------------------------

_METADATA = frozenset(
    ipaddress.ip_address(text)
    for text in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle, Hetzner, ...
        "169.254.170.2",  # AWS ECS task credentials
        "169.254.170.23",  # AWS EKS pod identity
        "169.254.0.23",  # Tencent Cloud
        "169.254.42.42",  # Scaleway
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud (legacy)
        "168.63.129.16",  # Azure host agent (WireServer)
        "fd00:ec2::254",  # AWS, IPv6
        "fd00:ec2::23",  # AWS EKS pod identity, IPv6
        "fd00:a9fe:a9fe::1",  # Akamai / Linode, IPv6
    )
)

# (class, network) refused whatever the settings say.
_ALWAYS_REFUSED = tuple(
    (name, ipaddress.ip_network(net))
    for name, net in (
        ("unspecified", "0.0.0.0/8"),
        ("unspecified", "::/128"),
        ("link-local", "169.254.0.0/16"),
        ("link-local", "fe80::/10"),
        ("multicast", "224.0.0.0/4"),
        ("multicast", "ff00::/8"),
        ("broadcast", "255.255.255.255/32"),
        ("reserved", "240.0.0.0/4"),
        ("a local NAT64 address", "64:ff9b:1::/48"),
    )
)

# (class, network) refused unless OUTBOUND_ALLOW_PRIVATE.
_PRIVATE = tuple(
    (name, ipaddress.ip_network(net))
    for name, net in (
        ("loopback", "127.0.0.0/8"),
        ("loopback", "::1/128"),
        ("private", "10.0.0.0/8"),
        ("private", "172.16.0.0/12"),
        ("private", "192.168.0.0/16"),
        ("private", "fc00::/7"),
        ("private", "fec0::/10"),
        ("shared (carrier-grade NAT)", "100.64.0.0/10"),
    )
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def _unwrapped(ip: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 one carries (mapped, NAT64, 6to4), else the address unscoped."""
    if isinstance(ip, ipaddress.IPv4Address):
        return ip
    bare = ipaddress.IPv6Address(int(ip))
    if bare.ipv4_mapped is not None:
        return bare.ipv4_mapped
    if bare in _NAT64:
        return ipaddress.IPv4Address(int(bare) & 0xFFFFFFFF)
    return bare.sixtofour or bare


def _address_class(ip: IPAddress) -> tuple[str, bool] | None:
    """(class, always refused) of an address that is not plainly public; None for a public one."""
    if ip in _METADATA:
        return "a cloud metadata address", True
    for name, net in _ALWAYS_REFUSED:
        if ip in net:
            return name, True
    for name, net in _PRIVATE:
        if ip in net:
            return name, False
    if not ip.is_global:
        return "reserved", True
    return None


def address_problem(ip: IPAddress, *, allow_private: bool) -> str | None:
    """Why a connection to ``ip`` is refused, or None when it may be made."""
    found = _address_class(_unwrapped(ip))
    if found is None:
        return None
    name, always = found
    if always:
        return f"the server's address is {name}; refused"
    if allow_private:
        return None
    return f"the server's address is {name}; refused ({_ALLOW_PRIVATE_HINT})"


def _setting(name: str, default: Any) -> Any:
    """A Django setting once the process has loaded Django's settings, else ``default``."""
    settings = getattr(sys.modules.get("django.conf"), "settings", None)
    if settings is None or not settings.configured:
        return default
    return getattr(settings, name, default)


def _allow_private(override: bool | None) -> bool:
    if override is not None:
        return override
    return bool(_setting("OUTBOUND_ALLOW_PRIVATE", False))


# --- What a lead may type -------------------------------------------------------------------


def api_key_env_problem(name: str) -> str | None:
    """Why ``name`` may not name the API key's environment variable, or None (empty: no key).

    The message never repeats the name: a key pasted by mistake is not shown back.
    """
    name = name.strip()
    if not name:
        return None
    if not _ENV_NAME.fullmatch(name):
        return (
            "give the name of an environment variable (letters, digits and underscores, "
            "not starting with a digit), not the key itself"
        )
    prefixes = tuple(p for p in _setting("OUTBOUND_KEY_ENV_PREFIXES", ("JUDGE_KEY_",)) if p)
    names = tuple(_setting("OUTBOUND_KEY_ENV_NAMES", ()))
    if name in names or name.startswith(prefixes):
        return None
    return _key_env_rule(prefixes, names)


def _key_env_rule(prefixes: tuple[str, ...], names: tuple[str, ...]) -> str:
    allowed = []
    if prefixes:
        allowed.append("a name starting with " + " or ".join(prefixes))
    if names:
        allowed.append("one of " + ", ".join(names))
    rule = " or ".join(allowed) if allowed else "no variable is allowed yet"
    return (
        f"the API key must come from an environment variable the operator allows: {rule} "
        "(the operator widens this with JUDGE_KEY_ENV_PREFIXES or JUDGE_KEY_ENV_NAMES)"
    )


def base_url_problem(url: str) -> str | None:
    """Why ``url`` may not be a server's base URL, or None (surrounding spaces are ignored).

    A host given as an address is checked here against the addresses always refused; private
    and loopback addresses, and every host name, are checked when a connection is made.
    """
    url = url.strip()
    if not url:
        return "give the server's base URL, e.g. https://api.example.org/v1"
    problem = _character_problem(url)
    if problem:
        return problem
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        return "this is not a valid URL"
    if parsed.scheme not in ("http", "https"):
        return "a base URL must start with http:// or https://"
    if parsed.userinfo or "@" in url.split("//", 1)[-1].split("/", 1)[0]:
        return "a base URL may not carry a user name or password (user@...)"
    if not parsed.host:
        return "a base URL needs a host name or address"
    if parsed.port is not None and not 0 < parsed.port < 65536:
        return "a base URL's port must be a number from 1 to 65535"
    return _host_problem(parsed.host)


def _character_problem(url: str) -> str | None:
    if any(ch.isspace() or unicodedata.category(ch)[0] == "C" for ch in url):
        return "a base URL may not contain spaces or control characters"
    if "\\" in url:
        return "a base URL may not contain a backslash (\\)"
    if "?" in url:
        return "a base URL may not carry a query string (?...)"
    if "#" in url:
        return "a base URL may not carry a fragment (#...)"
    return None


def _host_problem(host: str) -> str | None:
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        if _LEGACY_IPV4.fullmatch(host.lower()):
            return "write an IPv4 address as four decimal numbers (a.b.c.d)"
        return None
    found = _address_class(_unwrapped(ip))
    if found is not None and found[1]:
        return address_problem(ip, allow_private=True)
    return None


# --- Resolving and connecting ---------------------------------------------------------------


def _addresses(texts: Iterable[str]) -> list[IPAddress]:
    """The resolved addresses, each once, in the resolver's order."""
    found: list[IPAddress] = []
    for text in texts:
        ip = ipaddress.ip_address(text)
        if ip not in found:
            found.append(ip)
    return found


def _checked(addresses: list[IPAddress], allow_private: bool) -> list[str]:
    """The addresses to try, when every one of them may be reached; else OutboundRefused."""
    if not addresses:
        raise httpcore.ConnectError("the host name has no address")
    for ip in addresses:
        problem = address_problem(ip, allow_private=allow_private)
        if problem:
            raise OutboundRefused(problem)
    return [str(ip) for ip in addresses]


def _remaining(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


class _GuardedAsyncBackend(httpcore.AsyncNetworkBackend):
    """Resolves the host itself and connects only to an address the policy allows."""

    def __init__(self, allow_private: bool | None) -> None:
        self._inner = httpcore.AnyIOBackend()
        self._allow_private = allow_private

    async def _resolve(self, host: str, port: int, timeout: float | None) -> list[IPAddress]:
        try:
            with anyio.fail_after(timeout):
                infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout("the host name was not resolved in time") from exc
        except OSError as exc:
            raise httpcore.ConnectError("the host name was not resolved") from exc
        return _addresses(str(info[4][0]) for info in infos)

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        deadline = None if timeout is None else time.monotonic() + timeout
        addresses = await self._resolve(host, port, timeout)
        ips = _checked(addresses, _allow_private(self._allow_private))
        options = list(socket_options or ())
        for ip in ips[:-1]:
            with contextlib.suppress(httpcore.ConnectError, httpcore.ConnectTimeout):
                return await self._inner.connect_tcp(
                    ip, port, _remaining(deadline), local_address, options
                )
        return await self._inner.connect_tcp(
            ips[-1], port, _remaining(deadline), local_address, options
        )

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _GuardedBackend(httpcore.NetworkBackend):
    """The synchronous twin of ``_GuardedAsyncBackend`` (resolution has no timeout here)."""

    def __init__(self, allow_private: bool | None) -> None:
        self._inner = httpcore.SyncBackend()
        self._allow_private = allow_private

    def _resolve(self, host: str, port: int) -> list[IPAddress]:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise httpcore.ConnectError("the host name was not resolved") from exc
        return _addresses(str(info[4][0]) for info in infos)

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        deadline = None if timeout is None else time.monotonic() + timeout
        ips = _checked(self._resolve(host, port), _allow_private(self._allow_private))
        options = list(socket_options or ())
        for ip in ips[:-1]:
            with contextlib.suppress(httpcore.ConnectError, httpcore.ConnectTimeout):
                return self._inner.connect_tcp(
                    ip, port, _remaining(deadline), local_address, options
                )
        return self._inner.connect_tcp(ips[-1], port, _remaining(deadline), local_address, options)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


# --- httpx transports over the guarded backends ---------------------------------------------

# httpcore's exceptions as httpx raises them, the most specific first.
_HTTPX_ERRORS: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
    (httpcore.ProxyError, httpx.ProxyError),
)


@contextlib.contextmanager
def _httpx_errors() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        for source, target in _HTTPX_ERRORS:
            if isinstance(exc, source):
                raise target(str(exc)) from exc
        raise


def _core_request(request: httpx.Request) -> httpcore.Request:
    url = request.url
    return httpcore.Request(
        method=request.method,
        url=httpcore.URL(
            scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path
        ),
        headers=request.headers.raw,
        content=request.stream,
        extensions=request.extensions,
    )


class _AsyncBody(httpx.AsyncByteStream):
    def __init__(self, stream: AsyncIterable[bytes]) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _httpx_errors():
            async for part in self._stream:
                yield part

    async def aclose(self) -> None:
        close = getattr(self._stream, "aclose", None)
        if close is not None:
            await close()


class _Body(httpx.SyncByteStream):
    def __init__(self, stream: Iterable[bytes]) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        with _httpx_errors():
            yield from self._stream

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()


class _GuardedAsyncTransport(httpx.AsyncBaseTransport):
    def __init__(self, pool: httpcore.AsyncConnectionPool) -> None:
        self._pool = pool

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        with _httpx_errors():
            answer = await self._pool.handle_async_request(_core_request(request))
        assert isinstance(answer.stream, AsyncIterable)
        return httpx.Response(
            status_code=answer.status,
            headers=answer.headers,
            stream=_AsyncBody(answer.stream),
            extensions=answer.extensions,
        )

    async def aclose(self) -> None:
        await self._pool.aclose()


class _GuardedTransport(httpx.BaseTransport):
    def __init__(self, pool: httpcore.ConnectionPool) -> None:
        self._pool = pool

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        with _httpx_errors():
            answer = self._pool.handle_request(_core_request(request))
        assert isinstance(answer.stream, Iterable)
        return httpx.Response(
            status_code=answer.status,
            headers=answer.headers,
            stream=_Body(answer.stream),
            extensions=answer.extensions,
        )

    def close(self) -> None:
        self._pool.close()


def _pool_options(
    verify: ssl.SSLContext | bool,
    trust_env: bool,
    http1: bool,
    http2: bool,
    limits: httpx.Limits | None,
    retries: int,
    local_address: str | None,
) -> dict[str, Any]:
    limits = limits or httpx.Limits(max_connections=100, max_keepalive_connections=20)
    return {
        "ssl_context": httpx.create_ssl_context(verify=verify, trust_env=trust_env),
        "max_connections": limits.max_connections,
        "max_keepalive_connections": limits.max_keepalive_connections,
        "keepalive_expiry": limits.keepalive_expiry,
        "http1": http1,
        "http2": http2,
        "retries": retries,
        "local_address": local_address,
    }


def guarded_async_transport(
    *,
    verify: ssl.SSLContext | bool = True,
    trust_env: bool = True,
    http1: bool = True,
    http2: bool = False,
    limits: httpx.Limits | None = None,
    retries: int = 0,
    local_address: str | None = None,
    allow_private: bool | None = None,
) -> httpx.AsyncBaseTransport:
    """An httpx transport that connects only to allowed addresses (see the module docstring).

    The options are ``httpx.AsyncHTTPTransport``'s, without proxies and Unix sockets
    (``trust_env`` reads only the certificate settings). ``allow_private`` None follows
    ``OUTBOUND_ALLOW_PRIVATE`` at each connection.
    """
    options = _pool_options(verify, trust_env, http1, http2, limits, retries, local_address)
    backend = _GuardedAsyncBackend(allow_private)
    return _GuardedAsyncTransport(httpcore.AsyncConnectionPool(network_backend=backend, **options))


def guarded_transport(
    *,
    verify: ssl.SSLContext | bool = True,
    trust_env: bool = True,
    http1: bool = True,
    http2: bool = False,
    limits: httpx.Limits | None = None,
    retries: int = 0,
    local_address: str | None = None,
    allow_private: bool | None = None,
) -> httpx.BaseTransport:
    """The synchronous twin of ``guarded_async_transport``, for ``httpx.Client``."""
    options = _pool_options(verify, trust_env, http1, http2, limits, retries, local_address)
    backend = _GuardedBackend(allow_private)
    return _GuardedTransport(httpcore.ConnectionPool(network_backend=backend, **options))


# --- How failures read ----------------------------------------------------------------------


def _clean(text: str) -> str:
    """``text`` on one line: control and format characters dropped, spaces collapsed."""
    kept = (" " if ch.isspace() else ch for ch in text)
    return " ".join("".join(ch for ch in kept if unicodedata.category(ch)[0] != "C").split())


def _json_message(body: bytes) -> str:
    """The error message of an OpenAI-shaped JSON error body, cleaned; "" when there is none."""
    if len(body) > _JSON_READ_MAX_BYTES:
        return ""
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):
        return ""
    if not isinstance(payload, dict):
        return ""
    error = payload.get("error")
    if isinstance(error, dict):
        error = error.get("message")
    for candidate in (error, payload.get("message"), payload.get("detail")):
        if isinstance(candidate, str) and _clean(candidate):
            return _clean(candidate)
    return ""


def _size_text(size: int) -> str:
    if size < 1000:
        return counted(size, "byte")
    if size < 999_950:
        return f"{size / 1000:.1f} kB"
    return f"{size / 1_000_000:.1f} MB"


def _media_type_text(content_type: str) -> str:
    media_type = content_type.split(";", 1)[0].strip().lower()
    if not media_type:
        return "no content type"
    return media_type if _MEDIA_TYPE.fullmatch(media_type) else "an unusual content type"


def upstream_error_text(status: int, headers_content_type: str, body: bytes) -> str:
    """An answer that is not a success, as a job card shows it.

    ``HTTP 400: <message>`` when the body is an OpenAI-shaped JSON error (``{"error":
    {"message": ...}}``, ``{"error": "..."}``, ``{"message": ...}``; the message cleaned and cut to
    MESSAGE_SHOWN_CHARS), else ``HTTP 502 (text/html, 1.2 kB)``: never the body itself.
    """
    message = _json_message(body)
    if message:
        if len(message) > MESSAGE_SHOWN_CHARS:
            message = message[: MESSAGE_SHOWN_CHARS - 1] + "…"
        return f"HTTP {status}: {message}"
    return f"HTTP {status} ({_media_type_text(headers_content_type)}, {_size_text(len(body))})"


def connection_error_text(exc: BaseException, timeout: float) -> str:
    """A failed request as a job card shows it: the same words for a closed port, a refused or
    reset connection and a server speaking another protocol; a timeout says how long was waited;
    a refused address says its class."""
    if isinstance(exc, OutboundRefused):
        return str(exc)
    if isinstance(exc, httpx.TimeoutException | TimeoutError):
        seconds = int(timeout) if float(timeout).is_integer() else round(timeout, 2)
        return f"no answer within {seconds} s"
    return "could not reach the server (connection failed)"
