"""The demo's images, drawn with Pillow: charts, geometry figures and simple scenes.

Every function is deterministic (same arguments, same PNG bytes), so re-running the demo
builder produces identical files and the import recognises them as unchanged.
"""

from __future__ import annotations

import io
import math

from PIL import Image, ImageDraw, ImageFont

W, H = 800, 560
INK = (34, 38, 46)
GRID = (222, 226, 232)
PALETTE = [(31, 95, 191), (214, 112, 38), (46, 139, 87), (150, 63, 180), (200, 55, 70)]


def _font(size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.load_default(size=size)


def _png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _canvas(title: str) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    image = Image.new("RGB", (W, H), "white")
    draw = ImageDraw.Draw(image)
    draw.text((W // 2, 28), title, fill=INK, font=_font(26), anchor="mm")
    return image, draw


def _axes(draw: ImageDraw.ImageDraw, top: float, unit: str) -> tuple[int, int, int, int]:
    left, right, y0, y1 = 90, W - 40, H - 80, 70
    for i in range(6):
        value = top * i / 5
        y = y0 - (y0 - y1) * i / 5
        draw.line([(left, y), (right, y)], fill=GRID, width=1)
        label = f"{value:g}"
        draw.text((left - 10, y), label, fill=INK, font=_font(16), anchor="rm")
    draw.line([(left, y1), (left, y0), (right, y0)], fill=INK, width=2)
    draw.text((left - 10, y1 - 22), unit, fill=INK, font=_font(16), anchor="lm")
    return left, right, y0, y1


def bar_chart(title: str, labels: list[str], values: list[float], unit: str, top: float) -> bytes:
    image, draw = _canvas(title)
    left, right, y0, y1 = _axes(draw, top, unit)
    slot = (right - left) / len(values)
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        x = left + slot * i + slot * 0.2
        height = (y0 - y1) * value / top
        draw.rectangle([x, y0 - height, x + slot * 0.6, y0], fill=PALETTE[i % len(PALETTE)])
        draw.text(
            (x + slot * 0.3, y0 - height - 12), f"{value:g}", fill=INK, font=_font(16), anchor="mm"
        )
        draw.text((x + slot * 0.3, y0 + 20), label, fill=INK, font=_font(17), anchor="mm")
    return _png(image)


def line_chart(title: str, labels: list[str], values: list[float], unit: str, top: float) -> bytes:
    image, draw = _canvas(title)
    left, right, y0, y1 = _axes(draw, top, unit)
    step = (right - left - 40) / (len(values) - 1)
    points = [(left + 20 + step * i, y0 - (y0 - y1) * v / top) for i, v in enumerate(values)]
    draw.line(points, fill=PALETTE[0], width=4, joint="curve")
    for (x, y), label in zip(points, labels, strict=True):
        draw.ellipse([x - 5, y - 5, x + 5, y + 5], fill=PALETTE[1])
        draw.text((x, y0 + 20), label, fill=INK, font=_font(15), anchor="mm")
    return _png(image)


def pie_chart(title: str, labels: list[str], shares: list[int]) -> bytes:
    image, draw = _canvas(title)
    box = [90, 90, 470, 470]
    start = -90.0
    for i, share in enumerate(shares):
        end = start + 360 * share / 100
        draw.pieslice(box, start, end, fill=PALETTE[i % len(PALETTE)], outline="white", width=3)
        start = end
    for i, (label, share) in enumerate(zip(labels, shares, strict=True)):
        y = 150 + i * 48
        draw.rectangle([520, y - 14, 548, y + 14], fill=PALETTE[i % len(PALETTE)])
        draw.text((562, y), f"{label}  {share}%", fill=INK, font=_font(20), anchor="lm")
    return _png(image)


def scene(
    *, trees: int, windows: int, car: str | None, sun: bool, clouds: int, people: int, door: str
) -> bytes:
    """A street scene: sky, house, trees, optional car, sun, clouds and stick-figure people."""
    image = Image.new("RGB", (W, H), (174, 214, 241))
    draw = ImageDraw.Draw(image)
    draw.rectangle([0, 400, W, H], fill=(120, 180, 90))
    draw.rectangle([0, 470, W, 530], fill=(110, 110, 115))
    for x in range(20, W, 90):
        draw.rectangle([x, 497, x + 40, 503], fill=(240, 240, 240))
    if sun:
        draw.ellipse([640, 40, 730, 130], fill=(252, 204, 60))
    for i in range(clouds):
        cx, cy = 120 + i * 190, 70 + (i % 2) * 30
        for dx, r in ((0, 28), (30, 36), (62, 26)):
            draw.ellipse([cx + dx - r, cy - r, cx + dx + r, cy + r], fill="white")
    # House
    draw.rectangle([300, 250, 520, 420], fill=(225, 196, 150), outline=INK, width=2)
    draw.polygon([(285, 252), (410, 160), (535, 252)], fill=(160, 60, 50), outline=INK)
    door_color = {"red": (190, 40, 40), "blue": (40, 80, 190), "green": (40, 130, 70)}[door]
    draw.rectangle([390, 340, 430, 420], fill=door_color, outline=INK, width=2)
    spots = [(320, 280), (460, 280), (320, 345), (460, 345), (390, 270)]
    for x, y in spots[:windows]:
        draw.rectangle([x, y, x + 40, y + 40], fill=(200, 230, 250), outline=INK, width=2)
        draw.line([(x + 20, y), (x + 20, y + 40)], fill=INK)
    for i in range(trees):
        x = 60 + i * 70 if i < 3 else 580 + (i - 3) * 70
        draw.rectangle([x + 18, 360, x + 30, 420], fill=(110, 70, 40))
        draw.ellipse([x - 6, 290, x + 54, 370], fill=(40, 120, 50))
    if car:
        color = {"red": (200, 40, 40), "yellow": (240, 200, 40), "blue": (40, 90, 200)}[car]
        draw.rounded_rectangle([560, 455, 720, 500], radius=10, fill=color, outline=INK)
        draw.rounded_rectangle([590, 430, 690, 462], radius=8, fill=color, outline=INK)
        for wx in (590, 690):
            draw.ellipse([wx - 14, 488, wx + 14, 516], fill=INK)
    for i in range(people):
        x, y = 200 + i * 36, 420
        draw.ellipse([x - 8, y - 60, x + 8, y - 44], outline=INK, width=2)
        draw.line([(x, y - 44), (x, y - 18)], fill=INK, width=2)
        draw.line([(x - 12, y - 36), (x + 12, y - 36)], fill=INK, width=2)
        draw.line([(x, y - 18), (x - 10, y)], fill=INK, width=2)
        draw.line([(x, y - 18), (x + 10, y)], fill=INK, width=2)
    return _png(image)


def _label(draw: ImageDraw.ImageDraw, xy: tuple[float, float], text: str, size: int = 24) -> None:
    draw.text(xy, text, fill=INK, font=_font(size), anchor="mm")


def right_triangle(a: float, b: float, unit: str = "cm") -> bytes:
    image, draw = _canvas("Right triangle ABC")
    scale = 360 / max(a, b)
    cx, cy = 180, 470
    bx, by = cx + b * scale, cy
    ax, ay = cx, cy - a * scale
    draw.polygon([(cx, cy), (bx, by), (ax, ay)], outline=INK, width=4)
    draw.rectangle([cx, cy - 22, cx + 22, cy], outline=INK, width=2)
    _label(draw, (cx - 20, cy + 18), "C")
    _label(draw, (bx + 18, by + 18), "B")
    _label(draw, (ax - 20, ay - 12), "A")
    _label(draw, (cx - 55, (cy + ay) / 2), f"{a:g} {unit}")
    _label(draw, ((cx + bx) / 2, cy + 28), f"{b:g} {unit}")
    _label(draw, ((ax + bx) / 2 + 30, (ay + by) / 2 - 20), "?")
    return _png(image)


def triangle_angles(angle_a: int, angle_b: int) -> bytes:
    image, draw = _canvas("Triangle PQR")
    angle_c = 180 - angle_a - angle_b
    base = 520
    # Law of sines: place R from P with the angle at P.
    side_pr = base * math.sin(math.radians(angle_b)) / math.sin(math.radians(angle_c))
    px, py = 130, 470
    qx, qy = px + base, py
    rx = px + side_pr * math.cos(math.radians(angle_a))
    ry = py - side_pr * math.sin(math.radians(angle_a))
    if ry < 80:  # keep a very tall triangle on the canvas
        factor = (py - 80) / (py - ry)
        rx, ry = px + (rx - px) * factor, 80
        qx = px + base * factor
    draw.polygon([(px, py), (qx, qy), (rx, ry)], outline=INK, width=4)
    _label(draw, (px - 20, py + 18), "P")
    _label(draw, (qx + 20, qy + 18), "Q")
    _label(draw, (rx, ry - 22), "R")
    _label(draw, (px + 62, py - 22), f"{angle_a}°", 22)
    _label(draw, (qx - 62, qy - 22), f"{angle_b}°", 22)
    _label(draw, (rx, ry + 40), "x", 26)
    return _png(image)


def rectangle_garden(width: float, height: float, path: float) -> bytes:
    """A rectangular garden with a path of constant width around it (outer dimensions)."""
    image, draw = _canvas("Garden with a surrounding path")
    scale = 440 / max(width, height * 1.3)
    w, h = width * scale, height * scale
    x0, y0 = (W - w) / 2, 90 + (400 - h) / 2
    p = path * scale
    draw.rectangle([x0, y0, x0 + w, y0 + h], fill=(214, 200, 170), outline=INK, width=3)
    draw.rectangle(
        [x0 + p, y0 + p, x0 + w - p, y0 + h - p], fill=(110, 175, 90), outline=INK, width=3
    )
    _label(draw, (x0 + w / 2, y0 + h + 26), f"{width:g} m")
    _label(draw, (x0 - 46, y0 + h / 2), f"{height:g} m")
    _label(draw, (x0 + p / 2 + 30, y0 + p / 2 + 2), f"path {path:g} m", 16)
    return _png(image)


def circle_sector(radius: float, angle: int) -> bytes:
    image, draw = _canvas("Circle with centre O")
    cx, cy, r = 400, 300, 200
    draw.ellipse([cx - r, cy - r, cx + r, cy + r], outline=INK, width=4)
    draw.pieslice(
        [cx - r, cy - r, cx + r, cy + r], -angle, 0, fill=(190, 215, 245), outline=INK, width=3
    )
    _label(draw, (cx - 16, cy + 16), "O")
    _label(draw, (cx + r / 2, cy + 20), f"r = {radius:g}")
    mid = math.radians(-angle / 2)
    _label(draw, (cx + 60 * math.cos(mid), cy + 60 * math.sin(mid)), f"{angle}°", 20)
    return _png(image)
