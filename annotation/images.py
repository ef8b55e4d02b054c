"""Image ingestion: verify with Pillow, apply EXIF orientation, store the original and a web copy.

The original bytes are kept untouched; the web rendition (long side at most ``WEB_LONG_SIDE``) is
what the labeling screen shows. Files are named by content (SHA-256), so re-importing the same
image writes nothing new.

Every frame is checked: an animated GIF, WebP or PNG, or a multi-page TIFF, has at most
``IMAGE_MAX_FRAMES`` frames, each within the pixel limit, and all of them together within it too
(the whole file decodes within the same budget as one still image). Its web rendition is its
first frame, a still: an annotator judges responses about one picture, which must not change
under their eyes. The original is kept as uploaded.
"""

from __future__ import annotations

import hashlib
import io
import warnings
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile
from PIL import Image, ImageOps, ImageSequence, UnidentifiedImageError

# A pixel limit far below Pillow's own (about 89 megapixels) because the web rendition is built
# in memory; a 40 MP photo still passes. Override with the IMAGE_MAX_PIXELS setting.
DEFAULT_MAX_PIXELS = 40_000_000
# Frames of an animation or pages of a TIFF; override with the IMAGE_MAX_FRAMES setting.
DEFAULT_MAX_FRAMES = 100
WEB_LONG_SIDE = 1600
ALLOWED_FORMATS = {"JPEG", "PNG", "GIF", "WEBP", "BMP", "TIFF"}
WEB_READY = {"JPEG", "PNG", "WEBP", "GIF"}
EXTENSIONS = {
    "JPEG": "jpg",
    "PNG": "png",
    "GIF": "gif",
    "WEBP": "webp",
    "BMP": "bmp",
    "TIFF": "tif",
}


class ImageRejected(ValueError):
    """The bytes are not an image the platform accepts; the message says why."""


@dataclass(frozen=True)
class ImageInfo:
    format: str
    width: int  # after EXIF orientation
    height: int
    sha256: str


@dataclass(frozen=True)
class ProcessedImage:
    info: ImageInfo
    original: bytes
    original_ext: str
    web: bytes
    web_ext: str


def max_pixels() -> int:
    return int(getattr(settings, "IMAGE_MAX_PIXELS", DEFAULT_MAX_PIXELS))


def max_frames() -> int:
    return int(getattr(settings, "IMAGE_MAX_FRAMES", DEFAULT_MAX_FRAMES))


def _frames_checked(image: Image.Image, limit: int) -> None:
    """Decode every frame (page) of ``image`` within the limits, then go back to the first.

    ``load()`` decodes the pixel data (``verify()`` does not) and fails on truncation.
    """
    most, total = max_frames(), 0
    for number, frame in enumerate(ImageSequence.Iterator(image), start=1):
        if number > most:
            raise ImageRejected(f"more than {most} frames (an image has at most {most})")
        width, height = frame.size
        if width * height > limit:
            raise ImageRejected(
                f"frame {number} of {width}x{height} pixels exceeds the limit of {limit:,} "
                "pixels (possible decompression bomb)"
            )
        total += width * height
        if total > limit:
            raise ImageRejected(
                f"the first {number} frames hold {total:,} pixels together, over the limit of "
                f"{limit:,} pixels (possible decompression bomb)"
            )
        frame.load()
    image.seek(0)


def _open_checked(data: bytes) -> Image.Image:
    """Open, check format and pixel count from the header, verify the structure."""
    if not data:
        raise ImageRejected("the image is empty")
    limit = max_pixels()
    try:
        with warnings.catch_warnings():
            # Pillow only warns between its limit and twice its limit; a warning is a rejection.
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            probe = Image.open(io.BytesIO(data))
            if probe.format not in ALLOWED_FORMATS:
                raise ImageRejected(f"unsupported image format {probe.format}")
            width, height = probe.size
            if width * height > limit:
                raise ImageRejected(
                    f"image of {width}x{height} pixels exceeds the limit of {limit:,} pixels "
                    "(possible decompression bomb)"
                )
            probe.verify()
            image = Image.open(io.BytesIO(data))
            _frames_checked(image, limit)
    except ImageRejected:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageRejected(f"decompression bomb: {exc}") from exc
    except UnidentifiedImageError as exc:
        raise ImageRejected("not an image (Pillow cannot identify the file)") from exc
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        text = str(exc)
        if "truncated" in text.lower() or isinstance(exc, EOFError):
            raise ImageRejected(f"truncated image file ({text or 'unexpected end'})") from exc
        raise ImageRejected(f"broken image: {text}") from exc
    return image


def image_inspect(data: bytes) -> ImageInfo:
    """Verify ``data`` fully and return its format, displayed size and SHA-256."""
    image = _open_checked(data)
    fmt = image.format or "PNG"
    oriented = ImageOps.exif_transpose(image)
    return ImageInfo(
        format=fmt,
        width=oriented.width,
        height=oriented.height,
        sha256=hashlib.sha256(data).hexdigest(),
    )


def _web_rendition(image: Image.Image, fmt: str, data: bytes) -> tuple[bytes, str]:
    orientation = image.getexif().get(0x0112, 1)
    still = getattr(image, "n_frames", 1) == 1
    if max(image.size) <= WEB_LONG_SIDE and orientation == 1 and fmt in WEB_READY and still:
        # Already fit for the browser: re-encoding would only cost time and quality.
        return data, EXTENSIONS[fmt]
    image = ImageOps.exif_transpose(image)
    if max(image.size) > WEB_LONG_SIDE:
        image.thumbnail((WEB_LONG_SIDE, WEB_LONG_SIDE), Image.Resampling.LANCZOS)
    # Charts, figures and anything with transparency stay PNG (sharp lines); photos go to JPEG.
    has_alpha = image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info
    out = io.BytesIO()
    if has_alpha or fmt in ("PNG", "GIF", "BMP") or image.mode == "P":
        if image.mode not in ("RGB", "RGBA", "L", "LA"):
            image = image.convert("RGBA" if has_alpha else "RGB")
        image.save(out, format="PNG")
        return out.getvalue(), "png"
    if image.mode != "RGB":
        image = image.convert("RGB")
    image.save(out, format="JPEG", quality=85, optimize=True, progressive=True)
    return out.getvalue(), "jpg"


def image_process(data: bytes) -> ProcessedImage:
    """Verify ``data`` and build its web rendition; raises :class:`ImageRejected`."""
    image = _open_checked(data)
    fmt = image.format or "PNG"
    web, web_ext = _web_rendition(image, fmt, data)
    oriented = ImageOps.exif_transpose(image)
    info = ImageInfo(
        format=fmt,
        width=oriented.width,
        height=oriented.height,
        sha256=hashlib.sha256(data).hexdigest(),
    )
    return ProcessedImage(
        info=info, original=data, original_ext=EXTENSIONS[fmt], web=web, web_ext=web_ext
    )


def _store(field_file: Any, instance: Any, filename: str, content: bytes) -> tuple[str, bool]:
    """Save ``content`` under the field's upload path unless that file already exists."""
    field = field_file.field
    name = field.generate_filename(instance, filename)
    storage = field.storage
    if storage.exists(name):
        return name, False
    return storage.save(name, ContentFile(content)), True


def sample_image_attach(*, sample: Any, processed: ProcessedImage) -> list[str]:
    """Store both files and set the sample's image fields (not saved); returns new file names."""
    created = []
    stem = processed.info.sha256[:32]
    name, new = _store(sample.image, sample, f"{stem}.{processed.original_ext}", processed.original)
    sample.image.name = name
    if new:
        created.append(name)
    name, new = _store(sample.image_web, sample, f"{stem}.{processed.web_ext}", processed.web)
    sample.image_web.name = name
    if new:
        created.append(name)
    sample.image_width = processed.info.width
    sample.image_height = processed.info.height
    sample.image_sha256 = processed.info.sha256
    return created
