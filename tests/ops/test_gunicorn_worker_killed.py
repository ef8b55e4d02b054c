"""A gunicorn worker killed in the middle of a request: the next request answers, and every
vote acknowledged before or after is stored (the killed one, never acknowledged, is not).

One sync worker, so the request being killed is certainly the one it holds: a vote whose body
is only half sent, which the worker waits for. A second vote sent meanwhile waits in the
listening socket's queue (the master's) and is answered by the worker gunicorn starts instead.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
import urllib.parse

import pytest

from annotation.models import Vote
from annotation.services.projects import member_add
from tests.annotation import work_data
from tests.celery_worker import wait_for
from tests.ops.live import Annotator, Browser, gunicorn, logged_in, login_password

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def half_sent_vote(browser: Browser, path: str, form: dict[str, object]) -> socket.socket:
    """A vote whose headers and half its body are sent: the worker reading it waits."""
    body = urllib.parse.urlencode(form).encode()
    cookies = "; ".join(f"{k}={v}" for k, v in browser.cookies.items())
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{browser.port}\r\nCookie: {cookies}\r\n"
        f"X-CSRFToken: {browser.cookies['csrftoken']}\r\nHX-Request: true\r\n"
        "Content-Type: application/x-www-form-urlencoded\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    sock = socket.create_connection(("127.0.0.1", browser.port), timeout=30)
    sock.sendall(head.encode() + body[: len(body) // 2])
    return sock


def answer_of(sock: socket.socket) -> bytes:
    """What the server sent before the connection ended (nothing for a killed worker)."""
    chunks = []
    try:
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    except ConnectionResetError:
        pass
    finally:
        sock.close()
    return b"".join(chunks)


def test_the_next_request_answers_after_a_worker_is_killed_mid_request(
    tmp_path, project, lead, annotator
):
    work_data.make_formal(project, 10)
    member_add(project=project, user=annotator)
    work_data.calibrate(project, annotator, lead)
    login_password(annotator)
    with gunicorn(tmp_path, {}, workers=1) as server:
        ann = Annotator(logged_in(server.port, annotator.username), project.slug, annotator.pk)
        assert ann.page() == 200
        before = [ann.vote() for _ in range(5)]
        assert before == [200] * 5

        path = f"/projects/{project.slug}/label/"
        killed_form = ann.vote_form()
        pending = half_sent_vote(ann.browser, path, killed_form)
        time.sleep(1.0)  # the worker has read the headers and waits for the rest of the body
        (worker,) = server.worker_pids()
        # The same annotator votes again meanwhile (another tab): queued behind the stuck worker.
        queued: dict[str, int] = {}
        thread = threading.Thread(target=lambda: queued.update(status=ann.vote()))
        thread.start()
        time.sleep(0.5)
        assert thread.is_alive()  # still waiting: the only worker is held

        killed_at = time.monotonic()
        os.kill(worker, signal.SIGKILL)
        assert answer_of(pending) == b""  # the killed request got no answer at all
        thread.join(timeout=60)
        answered_after = time.monotonic() - killed_at
        assert queued == {"status": 200}
        wait_for(lambda: server.worker_pids() not in ([], [worker]), timeout=30)
        assert worker not in server.worker_pids()
        after = [ann.vote() for _ in range(3)]
        assert after == [200] * 3 and ann.page() == 200
        log = server.log()
    print(f"\nthe queued vote was answered {answered_after:.1f} s after the kill")
    assert f"Worker (pid:{worker}) was sent SIGKILL" in log
    # Every acknowledged vote is stored once; the killed request's vote was the one the queued
    # request then cast (the same item), so it is stored once, from the acknowledged request.
    stored = list(
        Vote.objects.filter(annotator=annotator).values_list(
            "sample_id", "criterion_id", "annotator_id"
        )
    )
    assert sorted(stored) == sorted(ann.acked) and len(stored) == 5 + 1 + 3
    item = (killed_form["sample_id"], killed_form["criterion_id"], annotator.pk)
    assert stored.count(item) == 1
