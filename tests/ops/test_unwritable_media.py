"""A media folder the server cannot write to: a plain answer, no server path, nothing half-made.

The tests run as root, for whom a folder's mode bits stop no write, so two failure modes that
stop root are used, each on a real folder of a temporary MEDIA_ROOT:

- ``under-a-file``: MEDIA_ROOT lies below a regular file, so no folder can be made in it (the
  operating system answers "Not a directory" to everyone); always available.
- ``read-only``: MEDIA_ROOT is an existing, empty folder made immutable (``chattr +i``, which
  stops root too), or made read-only by its mode when the tests do not run as root; skipped
  where neither stops a trial write (a file system without the immutable attribute).

With each, an upload on the import, predictions, curation and benchmark pages, and a version
build, must answer with the message that the media folder cannot be written to, show no absolute
path, and leave no job, sample, run, row or file behind. A disk that fills up half-way through a
file is played by an upload whose reading fails after its first part: the part already written
is removed, and so are the other files of the same upload.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from aggregation.models import DatasetFile, DatasetRow, DatasetVersion
from annotation.importing.uploads import uploads_keep
from annotation.models import Sample
from core.http import MESSAGE_HEADER
from core.media import MediaUnwritable
from core.models import Job
from curation.models import RawPrompt
from judging.models import JudgeRun
from tests.aggregation.export_data import criteria, label_with_votes, sample_with_image
from tests.conftest import make_sample
from tests.curation.data import open_prompt
from tests.judging.web_data import jsonl, make_version, prediction_lines
from tests.published_data import published_rows, write_parquet

pytestmark = pytest.mark.django_db

MESSAGE = "its media folder cannot be written to (missing, read-only or full)"
CHATTR = shutil.which("chattr")


def _immutable(folder: Path, on: bool) -> None:
    subprocess.run([CHATTR, "+i" if on else "-i", str(folder)], check=True, capture_output=True)


def _refuses_writes(folder: Path) -> bool:
    try:
        (folder / "probe").write_bytes(b"x")
    except OSError:
        return True
    (folder / "probe").unlink()
    return False


@pytest.fixture(params=["under-a-file", "read-only"])
def unwritable_media(request, tmp_path, settings) -> Iterator[Path]:
    """Point MEDIA_ROOT at a folder no write can reach, in the mode of the parameter."""
    if request.param == "under-a-file":
        blocker = tmp_path / "not-a-folder"
        blocker.write_text("a regular file where the media folder's parent should be")
        settings.MEDIA_ROOT = blocker / "media"
        yield blocker / "media"
        return
    root = tmp_path / "read-only-media"
    root.mkdir()
    as_root = os.geteuid() == 0
    if as_root:
        if CHATTR is None or subprocess.run([CHATTR, "+i", str(root)]).returncode != 0:
            pytest.skip("no immutable attribute on this file system")
    else:
        root.chmod(0o555)
    try:
        if not _refuses_writes(root):
            pytest.skip("this file system lets the tests write into a read-only folder")
        settings.MEDIA_ROOT = root
        yield root
        assert not any(root.iterdir()), "something was written to the media folder"
    finally:
        if as_root:
            _immutable(root, on=False)
        else:
            root.chmod(0o755)


def assert_plain(text: str, media: Path) -> None:
    """The message names the problem; no absolute path of the server is in the answer."""
    assert MESSAGE in text
    for path in {str(media), str(media.parent), str(Path(__file__).resolve().parents[2])}:
        assert path not in text
    assert "Errno" not in text and "Traceback" not in text


def samples_file() -> SimpleUploadedFile:
    line = {
        "id": "s1",
        "split": "open_ended",
        "question": "What is shown?",
        "response_a": "A cat.",
        "response_b": "A dog.",
        "model_a": "m-a",
        "model_b": "m-b",
    }
    return SimpleUploadedFile("samples.jsonl", (json.dumps(line) + "\n").encode())


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "htmx"])
def test_an_import_upload_is_refused_plainly(
    client, project, lead, unwritable_media, htmx, django_capture_on_commit_callbacks
):
    client.force_login(lead)
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("import-upload", args=[project.slug]), {"file": samples_file()}, **headers
        )
    assert response.status_code == 503
    assert_plain(response.content.decode(), unwritable_media)
    assert_plain(response[MESSAGE_HEADER], unwritable_media)
    assert response[MESSAGE_HEADER].startswith("The server could not store the uploaded file:")
    assert not Job.objects.exists() and not Sample.objects.exists()


def test_a_predictions_upload_is_refused_plainly(
    client, project, lead, unwritable_media, django_capture_on_commit_callbacks
):
    version = make_version(project)
    client.force_login(lead)
    url = reverse("predictions-upload", args=[project.slug, version.number])
    upload = SimpleUploadedFile("predictions.jsonl", jsonl(prediction_lines()))
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"judge": "judge-1", "file": upload})
    assert response.status_code == 503
    assert_plain(response.content.decode(), unwritable_media)
    assert_plain(response[MESSAGE_HEADER], unwritable_media)
    assert not Job.objects.exists() and not JudgeRun.objects.exists()


def test_a_curation_upload_is_refused_plainly(
    client, project, lead, unwritable_media, django_capture_on_commit_callbacks
):
    client.force_login(lead)
    lines = "".join(json.dumps(open_prompt(f"o{i}")) + "\n" for i in range(2))
    options = {"pairs_per_prompt": "2", "length_unit": "words", "seed": "0", "filters": ["length"]}
    upload = SimpleUploadedFile("generations.jsonl", lines.encode())
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("curation", args=[project.slug]), {**options, "file": upload}
        )
    assert response.status_code == 503
    assert_plain(response.content.decode(), unwritable_media)
    assert not Job.objects.exists() and not RawPrompt.objects.exists()


def test_a_benchmark_upload_is_refused_plainly(
    client, project, lead, tmp_path, unwritable_media, django_capture_on_commit_callbacks
):
    rows = published_rows(2, 2, seed=5)
    shards = []
    for split in ("open_ended", "reasoning"):
        path = write_parquet(
            [r for r in rows if r["split"] == split], tmp_path / f"{split}.parquet"
        )
        shards.append(SimpleUploadedFile(path.name, path.read_bytes()))
    client.force_login(lead)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("benchmark-import", args=[project.slug]), {"files": shards})
    assert response.status_code == 503
    assert_plain(response.content.decode(), unwritable_media)
    assert not Job.objects.exists() and not DatasetVersion.objects.exists()


@pytest.fixture
def labels(project, annotators):
    """Labels with votes on two samples without images: the build reads nothing from media."""
    oe = criteria(project, "open_ended")
    first = make_sample(project, "p1")
    second = make_sample(project, "p2")
    label_with_votes(first, oe[0], annotators[:3], "AAA")
    label_with_votes(second, oe[1], annotators[:3], "BBt")
    return project


def test_a_version_build_fails_plainly_and_keeps_nothing(
    client, labels, lead, unwritable_media, django_capture_on_commit_callbacks
):
    client.force_login(lead)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("version-build", args=[labels.slug]))
    assert response.status_code == 302
    job = Job.objects.get(kind=Job.Kind.BUILD_VERSION)
    assert job.status == Job.Status.FAILED
    assert job.error.startswith("The server could not store the version's files:")
    assert_plain(job.error, unwritable_media)
    version = DatasetVersion.objects.get(project=labels)
    assert version.status == DatasetVersion.Status.FAILED
    assert version.note.startswith("Build failed: The server could not store the version's")
    assert_plain(version.note, unwritable_media)
    assert not DatasetRow.objects.exists() and not DatasetFile.objects.exists()
    # The versions page and the job's card say it the same way, without a path.
    page = client.get(reverse("versions", args=[labels.slug])).content.decode()
    assert_plain(page, unwritable_media)
    card = client.get(reverse("job-status", args=[job.pk])).content.decode()
    assert_plain(card, unwritable_media)


def test_a_build_that_cannot_read_a_file_names_no_path_either(
    client, project, lead, annotators, settings, django_capture_on_commit_callbacks
):
    sample = sample_with_image(project, "p1")
    label_with_votes(sample, criteria(project, "open_ended")[0], annotators[:3], "AAA")
    sample.image.storage.delete(sample.image.name)
    client.force_login(lead)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("version-build", args=[project.slug]))
    job = Job.objects.get(kind=Job.Kind.BUILD_VERSION)
    version = DatasetVersion.objects.get(project=project)
    expected = "a file could not be read or written (No such file or directory)"
    assert job.status == Job.Status.FAILED and job.error.startswith(expected)
    assert version.status == DatasetVersion.Status.FAILED and expected in version.note
    page = client.get(reverse("versions", args=[project.slug])).content.decode()
    media = Path(settings.MEDIA_ROOT)
    for text in (job.error, version.note, page):
        assert str(media) not in text and str(media.parent) not in text


class _FillsTheDisk(ContentFile):
    """An upload whose second part cannot be written: the disk is full by then."""

    def chunks(self, chunk_size=None):
        yield b"the first part is written"
        raise OSError(errno.ENOSPC, "No space left on device", "/srv/media/imports/x/y.jsonl")


def test_a_file_cut_short_by_a_full_disk_is_removed_with_its_siblings(project, settings):
    media = Path(settings.MEDIA_ROOT)
    good = SimpleUploadedFile("open_ended.parquet", b"complete")
    cut = _FillsTheDisk(b"", name="reasoning.parquet")
    with pytest.raises(MediaUnwritable) as refused:
        uploads_keep(project=project, uploads=[good, cut], default="rows.parquet")
    assert str(refused.value).startswith("The server could not store the uploaded file:")
    assert "/srv/media" not in str(refused.value)
    assert not [path for path in media.rglob("*") if path.is_file()]
    # The random folders of both uploads are gone too, not only their files.
    folders = sorted(path.relative_to(media).as_posix() for path in media.rglob("*"))
    assert folders == ["imports", f"imports/{project.slug}"]
