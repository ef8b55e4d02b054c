"""Images of several frames: every frame (TIFF page) is checked; the web copy is the first frame."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from annotation.images import DEFAULT_MAX_FRAMES, ImageRejected, image_inspect, image_process


def _frames(fmt: str, sizes: list[tuple[int, int]], **save: object) -> bytes:
    """An image of one frame (page) per size, each a different grey."""
    frames = [Image.new("L", size, 40 + 5 * i % 200) for i, size in enumerate(sizes)]
    out = io.BytesIO()
    frames[0].save(out, format=fmt, save_all=True, append_images=frames[1:], **save)
    return out.getvalue()


def test_a_tiff_page_past_the_first_is_held_to_the_pixel_limit(settings):
    settings.IMAGE_MAX_PIXELS = 100 * 100
    data = _frames("TIFF", [(10, 10), (101, 100)])
    with pytest.raises(ImageRejected) as refused:
        image_inspect(data)
    assert str(refused.value) == (
        "frame 2 of 101x100 pixels exceeds the limit of 10,000 pixels (possible decompression bomb)"
    )
    assert image_inspect(_frames("TIFF", [(10, 10), (90, 100)])).width == 10


def test_the_frames_together_are_held_to_the_pixel_limit(settings):
    settings.IMAGE_MAX_PIXELS = 50 * 50 * 4
    data = _frames("GIF", [(50, 50)] * 5, duration=40)
    with pytest.raises(ImageRejected) as refused:
        image_inspect(data)
    assert str(refused.value) == (
        "the first 5 frames hold 12,500 pixels together, over the limit of 10,000 pixels "
        "(possible decompression bomb)"
    )


def test_a_gif_of_thousands_of_frames_is_refused():
    data = _frames("GIF", [(2, 2)] * 3000, duration=20)
    assert Image.open(io.BytesIO(data)).n_frames == 3000
    with pytest.raises(ImageRejected) as refused:
        image_inspect(data)
    assert str(refused.value) == (
        f"more than {DEFAULT_MAX_FRAMES} frames (an image has at most {DEFAULT_MAX_FRAMES})"
    )


def test_an_animation_within_the_limits_is_kept_and_shown_as_its_first_frame():
    sizes = [(30, 20)] * 12
    data = _frames("GIF", sizes, duration=40, loop=0)
    processed = image_process(data)
    assert processed.original == data and processed.original_ext == "gif"
    web = Image.open(io.BytesIO(processed.web))
    assert (web.format, getattr(web, "n_frames", 1), web.size) == ("PNG", 1, (30, 20))
    first = Image.open(io.BytesIO(data)).convert("L")
    assert web.convert("L").tobytes() == first.tobytes()


def test_a_still_gif_is_still_served_as_uploaded():
    data = _frames("GIF", [(30, 20)])
    processed = image_process(data)
    assert processed.web == data and processed.web_ext == "gif"
