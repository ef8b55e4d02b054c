"""Image ingestion on its own: verification, orientation, web rendition, storage."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from annotation.images import ImageRejected, image_inspect, image_process, sample_image_attach
from tests.conftest import make_sample

from .import_data import jpeg_bytes, png_bytes


def noisy_jpeg() -> bytes:
    out = io.BytesIO()
    Image.effect_noise((200, 200), 60).convert("RGB").save(out, format="JPEG")
    return out.getvalue()


def test_large_image_gets_a_web_rendition_within_1600_px():
    out = io.BytesIO()
    Image.new("RGB", (3200, 1000), "white").save(out, format="JPEG")
    processed = image_process(out.getvalue())
    web = Image.open(io.BytesIO(processed.web))
    assert web.size == (1600, 500) and web.format == "JPEG"
    assert processed.original == out.getvalue()
    assert (processed.info.width, processed.info.height) == (3200, 1000)


def test_png_stays_png_and_small_images_keep_their_size():
    processed = image_process(png_bytes(size=(300, 200)))
    web = Image.open(io.BytesIO(processed.web))
    assert (web.format, web.size, processed.web_ext) == ("PNG", (300, 200), "png")


def test_exif_orientation_rotates_the_rendition():
    processed = image_process(jpeg_bytes((60, 20), orientation=6))
    assert Image.open(io.BytesIO(processed.web)).size == (20, 60)
    assert (processed.info.width, processed.info.height) == (20, 60)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "the image is empty"),
        (b"GIF89a but not really", "not an image"),
        (b"plain text", "not an image"),
        (noisy_jpeg()[:-3000], "truncated image"),
        (png_bytes(size=(80, 80))[:60], "truncated image"),
    ],
)
def test_bad_bytes_are_rejected_with_a_reason(data, message):
    with pytest.raises(ImageRejected, match=message):
        image_inspect(data)


def test_pixel_limit_rejects_decompression_bombs(settings):
    settings.IMAGE_MAX_PIXELS = 100 * 100 - 1
    with pytest.raises(ImageRejected, match="decompression bomb"):
        image_inspect(png_bytes(size=(100, 100)))


@pytest.mark.django_db
def test_attach_stores_by_content_and_reuses_existing_files(project):
    first = make_sample(project, "a")
    created = sample_image_attach(sample=first, processed=image_process(png_bytes()))
    first.save()
    assert len(created) == 2 and first.image.read() == png_bytes()
    second = make_sample(project, "b")
    again = sample_image_attach(sample=second, processed=image_process(png_bytes()))
    assert again == [] and second.image.name == first.image.name
    assert second.image_sha256 == first.image_sha256
