"""core/outbound.py: what a lead may type, which addresses are reached, how failures read.

Every connection here stays on 127.0.0.1; other addresses are only classified, never dialled.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import socket
import ssl
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from core.outbound import (
    OutboundRefused,
    address_problem,
    api_key_env_problem,
    base_url_problem,
    connection_error_text,
    guarded_async_transport,
    guarded_transport,
    upstream_error_text,
)
from tests.event_loop import run_coroutine

ROOT = Path(__file__).resolve().parents[2]
CONNECTION_FAILED = "could not reach the server (connection failed)"


# --- Base URLs ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("https://api.openai.com/v1", None),
        ("http://judge.example.org:8080/v1/", None),
        ("  https://api.example.org/v1  ", None),
        ("http://[2606:4700:4700::1111]/v1", None),
        ("http://[::1]:8000/v1", None),  # loopback: checked when connecting
        ("http://10.0.0.5/v1", None),  # private: checked when connecting
        ("", "give the server's base URL"),
        ("https://user:secret@api.example.org/v1", "may not carry a user name or password"),
        ("https://@api.example.org/v1", "may not carry a user name or password"),
        ("https://api.example.org/v1?q=1", "may not carry a query string (?...)"),
        ("https://api.example.org/v1?", "may not carry a query string (?...)"),
        ("https://api.example.org/v1#f", "may not carry a fragment (#...)"),
        ("ftp://api.example.org/v1", "must start with http:// or https://"),
        ("file:///etc/passwd", "must start with http:// or https://"),
        ("api.example.org/v1", "must start with http:// or https://"),
        ("http:///v1", "needs a host name or address"),
        ("http://api.example.org:0/v1", "port must be a number from 1 to 65535"),
        ("http://api.example.org:70000/v1", "port must be a number from 1 to 65535"),
        ("http://api.example.org:http/v1", "not a valid URL"),
        ("http://api.example .org/v1", "spaces or control characters"),
        ("http://api.example.org/v1\n", None),  # surrounding whitespace is stripped
        ("http://api.example.org/\tv1", "spaces or control characters"),
        ("http://api.example.org/v1\x00", "spaces or control characters"),
        ("http://api.example.org\\@evil.example/", "backslash"),
        ("http://169.254.169.254/latest", "a cloud metadata address; refused"),
        ("http://[fd00:ec2::254]/", "a cloud metadata address; refused"),
        ("http://100.100.100.200/", "a cloud metadata address; refused"),
        ("http://[fe80::1]/v1", "link-local; refused"),
        ("http://169.254.1.1/v1", "link-local; refused"),
        ("http://[::ffff:169.254.169.254]/", "a cloud metadata address; refused"),
        ("http://[::ffff:a9fe:101]/", "link-local; refused"),
        ("http://0.0.0.0:8000/", "unspecified; refused"),
        ("http://[::]:8000/", "unspecified; refused"),
        ("http://224.0.0.1/", "multicast; refused"),
        ("http://255.255.255.255/", "broadcast; refused"),
        ("http://127.1/", "four decimal numbers"),
        ("http://2130706433/", "four decimal numbers"),
        ("http://0x7f000001/", "four decimal numbers"),
    ],
)
def test_base_url_rules(url, problem):
    found = base_url_problem(url)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


# --- Addresses ------------------------------------------------------------------------------

PRIVATE_HINT = "OUTBOUND_ALLOW_PRIVATE=1"


@pytest.mark.parametrize(
    ("address", "refused_as", "always"),
    [
        ("8.8.8.8", None, False),
        ("2606:4700:4700::1111", None, False),
        ("::ffff:8.8.8.8", None, False),
        ("127.0.0.1", "loopback", False),
        ("127.255.0.9", "loopback", False),
        ("::1", "loopback", False),
        ("10.1.2.3", "private", False),
        ("172.16.0.1", "private", False),
        ("172.31.255.254", "private", False),
        ("192.168.1.1", "private", False),
        ("fd12:3456::1", "private", False),
        ("100.64.0.1", "shared (carrier-grade NAT)", False),
        ("::ffff:10.0.0.1", "private", False),
        ("::ffff:127.0.0.1", "loopback", False),
        ("169.254.169.254", "a cloud metadata address", True),
        ("169.254.170.2", "a cloud metadata address", True),
        ("fd00:ec2::254", "a cloud metadata address", True),
        ("100.100.100.200", "a cloud metadata address", True),
        ("192.0.0.192", "a cloud metadata address", True),
        ("168.63.129.16", "a cloud metadata address", True),
        ("::ffff:169.254.169.254", "a cloud metadata address", True),
        ("64:ff9b::a9fe:a9fe", "a cloud metadata address", True),  # NAT64
        ("2002:a9fe:a9fe::1", "a cloud metadata address", True),  # 6to4
        ("169.254.10.20", "link-local", True),
        ("fe80::1", "link-local", True),
        ("fe80::1%2", "link-local", True),
        ("::ffff:169.254.10.20", "link-local", True),
        ("0.0.0.0", "unspecified", True),
        ("0.1.2.3", "unspecified", True),
        ("::", "unspecified", True),
        ("224.0.0.251", "multicast", True),
        ("ff02::1", "multicast", True),
        ("255.255.255.255", "broadcast", True),
        ("240.0.0.1", "reserved", True),
        ("192.0.2.10", "reserved", True),  # documentation
        ("2001:db8::1", "reserved", True),  # documentation
    ],
)
def test_address_policy(address, refused_as, always):
    ip = ipaddress.ip_address(address)
    strict = address_problem(ip, allow_private=False)
    lenient = address_problem(ip, allow_private=True)
    if refused_as is None:
        assert strict is None and lenient is None
        return
    assert strict is not None and strict.startswith(
        f"the server's address is {refused_as}; refused"
    )
    if always:
        assert lenient == strict and PRIVATE_HINT not in strict
    else:
        assert lenient is None and PRIVATE_HINT in strict


# --- API key variables ----------------------------------------------------------------------


def test_key_variables_default_to_the_judge_prefix(settings, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgres://admin:hunter2@db/prod")
    assert api_key_env_problem("JUDGE_KEY_OPENAI") is None
    assert api_key_env_problem("") is None  # no key
    problem = api_key_env_problem("DATABASE_URL")
    assert problem is not None
    assert "JUDGE_KEY_" in problem and "JUDGE_KEY_ENV_PREFIXES" in problem
    assert "JUDGE_KEY_ENV_NAMES" in problem and "hunter2" not in problem
    assert api_key_env_problem("judge_key_openai") is not None  # names are case-sensitive


@pytest.mark.parametrize("name", ["sk-live-abc123", "1KEY", "JUDGE KEY", "JUDGE_KEY_$X", "KÉY"])
def test_key_variable_syntax_is_checked_without_echoing_it(name):
    problem = api_key_env_problem(name)
    assert problem is not None and "letters, digits and underscores" in problem
    assert name not in problem


def test_operators_widen_the_key_variables(settings):
    settings.OUTBOUND_KEY_ENV_PREFIXES = ("JUDGE_KEY_", "LLM_")
    settings.OUTBOUND_KEY_ENV_NAMES = ("OPENAI_API_KEY",)
    assert api_key_env_problem("LLM_TOGETHER") is None
    assert api_key_env_problem("OPENAI_API_KEY") is None
    problem = api_key_env_problem("SECRET_KEY")
    assert problem is not None
    assert "JUDGE_KEY_ or LLM_" in problem and "OPENAI_API_KEY" in problem
    settings.OUTBOUND_KEY_ENV_PREFIXES = ()
    settings.OUTBOUND_KEY_ENV_NAMES = ()
    assert "no variable is allowed" in (api_key_env_problem("JUDGE_KEY_OPENAI") or "")


def _settings_probe(env: dict[str, str], tmp_path: Path) -> dict[str, object]:
    code = (
        "import json, django; from django.conf import settings; django.setup();"
        "print(json.dumps([settings.OUTBOUND_ALLOW_PRIVATE,"
        " settings.OUTBOUND_KEY_ENV_PREFIXES, settings.OUTBOUND_KEY_ENV_NAMES]))"
    )
    names = ("OUTBOUND_ALLOW_PRIVATE", "JUDGE_KEY_ENV_PREFIXES", "JUDGE_KEY_ENV_NAMES")
    clean = {k: v for k, v in os.environ.items() if k not in names}
    clean.update(DJANGO_SETTINGS_MODULE="config.settings", VAR_DIR=str(tmp_path / "var"), **env)
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    allow, prefixes, names_ = json.loads(result.stdout)
    return {"allow": allow, "prefixes": prefixes, "names": names_}


def test_the_settings_come_from_the_environment(tmp_path):
    assert _settings_probe({}, tmp_path) == {
        "allow": False,
        "prefixes": ["JUDGE_KEY_"],
        "names": [],
    }
    widened = {
        "OUTBOUND_ALLOW_PRIVATE": "1",
        "JUDGE_KEY_ENV_PREFIXES": "JUDGE_KEY_, LLM_",
        "JUDGE_KEY_ENV_NAMES": "OPENAI_API_KEY",
    }
    assert _settings_probe(widened, tmp_path) == {
        "allow": True,
        "prefixes": ["JUDGE_KEY_", "LLM_"],
        "names": ["OPENAI_API_KEY"],
    }


def test_the_module_works_without_django(tmp_path):
    """The pure judge client imports this module: it must not load Django, and a process that
    never loads Django's settings gets the defaults."""
    code = (
        "import sys, httpx; from core import outbound as o;"
        "assert 'django' not in sys.modules, 'django was imported';"
        "print(o.api_key_env_problem('JUDGE_KEY_A') is None,"
        " o.api_key_env_problem('OPENAI_API_KEY') is None)\n"
        "try:\n httpx.Client(transport=o.guarded_transport()).get('http://127.0.0.1:9/')\n"
        "except o.OutboundRefused as exc:\n print(exc)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=os.environ
    )
    assert result.returncode == 0, result.stderr
    keys, refusal = result.stdout.splitlines()
    assert keys == "True False"
    assert refusal.startswith("the server's address is loopback; refused")


# --- Local servers --------------------------------------------------------------------------


class _Answer(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps({"host": self.headers.get("Host")}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def http_port() -> Iterator[int]:
    """A tiny HTTP server on 127.0.0.1 that answers with the Host header it got."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@contextmanager
def raw_server(handle: Callable[[socket.socket], None]) -> Iterator[int]:
    """A TCP server on 127.0.0.1 that gives each connection to ``handle``; yields its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(5)
            handle(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _garbage(conn: socket.socket) -> None:
    with conn:
        conn.recv(4096)
        conn.sendall(b"\x00\x13\x37SSH-2.0-not-http\r\n\xff\xfe\r\n\r\n")


def _reset(conn: socket.socket) -> None:
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


def _hang_up(conn: socket.socket) -> None:
    conn.close()


def get(url: str, *, timeout: float = 5.0) -> httpx.Response:
    async def call() -> httpx.Response:
        async with httpx.AsyncClient(transport=guarded_async_transport(), timeout=timeout) as c:
            return await c.get(url)

    return run_coroutine(call())


def failure_text(url: str, *, timeout: float = 5.0) -> str:
    with pytest.raises(httpx.TransportError) as caught:
        get(url, timeout=timeout)
    return connection_error_text(caught.value, timeout)


# --- Connections through the guarded transport ----------------------------------------------


def test_a_loopback_server_is_reached_only_when_allowed(settings, http_port):
    settings.OUTBOUND_ALLOW_PRIVATE = True
    answer = get(f"http://127.0.0.1:{http_port}/v1/models")
    assert answer.status_code == 200 and answer.json() == {"host": f"127.0.0.1:{http_port}"}

    settings.OUTBOUND_ALLOW_PRIVATE = False
    with pytest.raises(OutboundRefused) as caught:
        get(f"http://127.0.0.1:{http_port}/v1/models")
    assert isinstance(caught.value, httpx.ConnectError)
    text = connection_error_text(caught.value, 5.0)
    assert text.startswith("the server's address is loopback; refused")
    assert str(http_port) not in text


def test_a_host_name_is_resolved_when_connecting(settings, http_port):
    settings.OUTBOUND_ALLOW_PRIVATE = False
    with pytest.raises(OutboundRefused, match="loopback; refused"):
        get(f"http://localhost:{http_port}/")
    settings.OUTBOUND_ALLOW_PRIVATE = True
    answer = get(f"http://localhost:{http_port}/")
    assert answer.json() == {"host": f"localhost:{http_port}"}


def test_the_sync_transport_follows_the_same_rules(settings, http_port):
    settings.OUTBOUND_ALLOW_PRIVATE = True
    with httpx.Client(transport=guarded_transport()) as client:
        assert client.get(f"http://localhost:{http_port}/").json() == {
            "host": f"localhost:{http_port}"
        }
    with (
        httpx.Client(transport=guarded_transport(allow_private=False)) as client,
        pytest.raises(OutboundRefused, match="loopback; refused"),
    ):
        client.get(f"http://127.0.0.1:{http_port}/")


@pytest.fixture
def fake_names(monkeypatch):
    """Host names under ``.test`` resolve to the addresses given; others as usual."""
    names: dict[str, list[str]] = {}
    real = socket.getaddrinfo

    def resolve(host, port, *args, **kwargs):
        host = host.decode() if isinstance(host, bytes) else host
        if host not in names:
            return real(host, port, *args, **kwargs)
        if not names[host]:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [
            (
                socket.AF_INET6 if ":" in ip else socket.AF_INET,
                socket.SOCK_STREAM,
                6,
                "",
                (ip, port),
            )
            for ip in names[host]
        ]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    return names


def test_the_checked_address_is_the_one_dialled(settings, http_port, fake_names):
    """The transport resolves the name itself and connects to that address, with the URL's
    host name kept in the Host header (and for TLS)."""
    settings.OUTBOUND_ALLOW_PRIVATE = True
    fake_names["judge.test"] = ["127.0.0.1"]
    answer = get(f"http://judge.test:{http_port}/v1")
    assert answer.json() == {"host": f"judge.test:{http_port}"}
    with httpx.Client(transport=guarded_transport()) as client:
        assert client.get(f"http://judge.test:{http_port}/v1").status_code == 200


@pytest.fixture
def tls_port(tmp_path) -> Iterator[tuple[int, Path]]:
    """The HTTP server behind TLS with a certificate for judge.test; yields (port, cert file)."""
    if shutil.which("openssl") is None:
        pytest.skip("making a test certificate needs the openssl command")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    command = "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1"
    names = ["-subj", "/CN=judge.test", "-addext", "subjectAltName=DNS:judge.test"]
    files = ["-keyout", str(key), "-out", str(cert)]
    subprocess.run(["openssl", *command.split(), *names, *files], check=True, capture_output=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server.server_address[1], cert
    server.shutdown()
    server.server_close()


def test_tls_checks_the_name_of_the_url_on_the_checked_address(settings, tls_port, fake_names):
    settings.OUTBOUND_ALLOW_PRIVATE = True
    port, cert = tls_port
    fake_names["judge.test"] = ["127.0.0.1"]
    fake_names["other.test"] = ["127.0.0.1"]
    trusted = ssl.create_default_context(cafile=str(cert))

    async def call(host: str) -> httpx.Response:
        transport = guarded_async_transport(verify=trusted)
        async with httpx.AsyncClient(transport=transport, timeout=5.0) as client:
            return await client.get(f"https://{host}:{port}/v1")

    assert run_coroutine(call("judge.test")).json() == {"host": f"judge.test:{port}"}
    with pytest.raises(httpx.ConnectError) as caught:
        run_coroutine(call("other.test"))  # the certificate names judge.test only
    assert connection_error_text(caught.value, 5.0) == CONNECTION_FAILED


def test_every_address_of_a_name_is_checked(settings, http_port, fake_names):
    settings.OUTBOUND_ALLOW_PRIVATE = True
    fake_names["rebind.test"] = ["127.0.0.1", "169.254.169.254"]
    with pytest.raises(OutboundRefused, match="a cloud metadata address; refused"):
        get(f"http://rebind.test:{http_port}/")
    fake_names["mapped.test"] = ["::ffff:169.254.1.1"]
    with pytest.raises(OutboundRefused, match="link-local; refused"):
        get(f"http://mapped.test:{http_port}/")


def test_closed_refusing_resetting_and_foreign_ports_read_the_same(settings, http_port, fake_names):
    settings.OUTBOUND_ALLOW_PRIVATE = True
    fake_names["nowhere.test"] = []
    texts = {"closed": failure_text(f"http://127.0.0.1:{closed_port()}/")}
    with raw_server(_garbage) as port:
        texts["another protocol"] = failure_text(f"http://127.0.0.1:{port}/")
    with raw_server(_reset) as port:
        texts["reset"] = failure_text(f"http://127.0.0.1:{port}/")
    with raw_server(_hang_up) as port:
        texts["hung up"] = failure_text(f"http://127.0.0.1:{port}/")
    texts["TLS to plain HTTP"] = failure_text(f"https://127.0.0.1:{http_port}/")
    texts["unknown name"] = failure_text("http://nowhere.test/")
    assert set(texts.values()) == {CONNECTION_FAILED}, texts


def test_a_silent_server_reads_as_a_timeout(settings):
    settings.OUTBOUND_ALLOW_PRIVATE = True
    held: list[socket.socket] = []
    with raw_server(held.append) as port:
        text = failure_text(f"http://127.0.0.1:{port}/", timeout=0.3)
    for conn in held:
        conn.close()
    assert text == "no answer within 0.3 s"


@pytest.mark.parametrize(
    ("exc", "text"),
    [
        (httpx.ConnectError("[Errno 111] Connection refused"), CONNECTION_FAILED),
        (httpx.ReadError("[Errno 104] Connection reset by peer"), CONNECTION_FAILED),
        (httpx.RemoteProtocolError("illegal status line: bytearray(b'SSH')"), CONNECTION_FAILED),
        (ConnectionRefusedError(111, "Connection refused"), CONNECTION_FAILED),
        (httpx.ConnectTimeout("timed out"), "no answer within 120 s"),
        (httpx.ReadTimeout("timed out"), "no answer within 120 s"),
        (TimeoutError(), "no answer within 120 s"),
        (OutboundRefused("the server's address is link-local; refused"), "link-local; refused"),
    ],
)
def test_connection_error_text(exc, text):
    assert text in connection_error_text(exc, 120.0)


# --- Upstream answers -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "content_type", "body", "text"),
    [
        (
            400,
            "application/json",
            b'{"error": {"message": "model \\"x\\" not found", "type": "invalid_request_error"}}',
            'HTTP 400: model "x" not found',
        ),
        (
            500,
            "application/json",
            b'{"error": "CUDA out of memory"}',
            "HTTP 500: CUDA out of memory",
        ),
        (
            422,
            "text/plain",
            b'{"object": "error", "message": "max_tokens\\n too large\\u202e\\u0007"}',
            "HTTP 422: max_tokens too large",
        ),
        (404, "application/json", b'{"detail": "Not Found"}', "HTTP 404: Not Found"),
        (
            502,
            "text/html; charset=utf-8",
            b"<html><body>" + b"internal admin panel " * 55 + b"</body></html>",
            "HTTP 502 (text/html, 1.2 kB)",
        ),
        (
            503,
            "application/octet-stream",
            bytes(range(256)) * 8,
            "HTTP 503 (application/octet-stream, 2.0 kB)",
        ),
        (500, "", b"", "HTTP 500 (no content type, 0 bytes)"),
        (500, "text/plain", b"x", "HTTP 500 (text/plain, 1 byte)"),
        (
            401,
            "application/json",
            b'{"error": {"code": 401}}',
            "HTTP 401 (application/json, 24 bytes)",
        ),
        (400, "application/json", b'["error"]', "HTTP 400 (application/json, 9 bytes)"),
        (400, "application/json", b"[" * 50_000, "HTTP 400 (application/json, 50.0 kB)"),
        (500, "text/html\r\nX-Evil: 1", b"<p>", "HTTP 500 (an unusual content type, 3 bytes)"),
        (502, "text/plain", b"\xff\xfe\x00garbage", "HTTP 502 (text/plain, 10 bytes)"),
        (500, "text/plain", b"x" * 2_500_000, "HTTP 500 (text/plain, 2.5 MB)"),
    ],
)
def test_upstream_error_text(status, content_type, body, text):
    assert upstream_error_text(status, content_type, body) == text


def test_a_long_upstream_message_is_cut():
    body = json.dumps({"error": {"message": "word " * 200}}).encode()
    text = upstream_error_text(400, "application/json", body)
    message = text.removeprefix("HTTP 400: ")
    assert len(message) == 300 and message.endswith("…")
