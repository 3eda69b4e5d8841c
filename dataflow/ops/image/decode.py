"""Decode encoded image bytes into pixel arrays."""
from __future__ import annotations

import contextlib
import io
import threading
import warnings

import numpy as np
from PIL import Image, ImageOps

from dataflow.errors import RowError
from dataflow.ops.declare import Resources, op
from dataflow.ops.device import Device, resolve_device
from dataflow.ops.image.resize import fit_within

_SIXTEEN_BIT = {"I;16", "I;16B", "I;16L", "I;16N"}
_ROTATED = {5, 6, 7, 8}  # EXIF orientations that swap width and height
_ORIENTATION_TAG = 0x0112
_BAD_IMAGE = (OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError)
_PILLOW_LIMIT = threading.Lock()
MAX_PIXELS = 89_478_485
"""Default ``max_pixels`` of ``image.decode`` (Pillow's own warning limit); the run report's thumbnails use the same."""


def check_pixels(im: Image.Image, max_pixels: int) -> None:
    """Refuse an opened image (only its header is read) above ``max_pixels``: a row error."""
    if im.width * im.height > max_pixels:
        raise RowError(f"image of {im.width}x{im.height} pixels exceeds max_pixels={max_pixels}")


@contextlib.contextmanager
def pixel_limit(max_pixels: int):
    """Let Pillow open images up to ``max_pixels`` when that is above its own ``Image.MAX_IMAGE_PIXELS``.

    Pillow checks its module-wide limit while opening and while seeking frames, so a higher limit
    is set for the whole decode, under a lock, and restored after. Pillow still refuses images
    above twice the limit in force before ``max_pixels`` is checked (a row error either way).
    """
    if Image.MAX_IMAGE_PIXELS is None or max_pixels <= Image.MAX_IMAGE_PIXELS:
        yield
        return
    with _PILLOW_LIMIT:
        saved, Image.MAX_IMAGE_PIXELS = Image.MAX_IMAGE_PIXELS, max_pixels
        try:
            yield
        finally:
            Image.MAX_IMAGE_PIXELS = saved


def _to_mode(im: Image.Image, mode: str) -> Image.Image:
    if im.mode in _SIXTEEN_BIT or im.mode == "I":
        # Pillow clips (not scales) 16-bit samples when converting to 8-bit modes.
        arr = np.asarray(im, dtype=np.uint32)
        im = Image.fromarray((arr // 257).clip(0, 255).astype(np.uint8), mode="L")
    elif im.mode == "F":
        arr = np.asarray(im, dtype=np.float32)
        im = Image.fromarray(arr.clip(0, 255).astype(np.uint8), mode="L")
    elif im.mode in ("P", "PA") and mode == "RGB" and "transparency" in im.info:
        im = im.convert("RGBA")
    return im if im.mode == mode else im.convert(mode)


def _draft(im: Image.Image, max_side: int) -> None:
    """Ask the JPEG decoder for the smallest DCT scale that still covers the resize target."""
    orientation = im.getexif().get(_ORIENTATION_TAG, 1)
    w, h = (im.height, im.width) if orientation in _ROTATED else im.size
    tw, th = fit_within(w, h, max_side)
    if (tw, th) != (w, h):
        im.draft(None, (th, tw) if orientation in _ROTATED else (tw, th))


def _decode_cpu(data: bytes, mode: str, max_pixels: int, draft_max_side: int | None) -> np.ndarray:
    with warnings.catch_warnings(), pixel_limit(max_pixels):
        # Our own max_pixels check below speaks for sizes between Pillow's warning and error limits.
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        with Image.open(io.BytesIO(data)) as im:
            check_pixels(im, max_pixels)
            if draft_max_side and im.format == "JPEG":
                _draft(im, draft_max_side)
            im.seek(0)
            im.load()
            im = ImageOps.exif_transpose(im)
            return np.asarray(_to_mode(im, mode))


def _decode_cuda(data: bytes, mode: str, max_pixels: int) -> np.ndarray | None:
    """nvJPEG through torchvision for baseline JPEGs in RGB or L; None means "use the CPU path"."""
    import importlib.util

    if mode not in ("RGB", "L") or importlib.util.find_spec("torchvision") is None:
        return None
    with pixel_limit(max_pixels), Image.open(io.BytesIO(data)) as im:  # reads the header only
        if im.format != "JPEG" or im.mode not in ("RGB", "L"):
            return None
        check_pixels(im, max_pixels)
    import torch
    from torchvision.io import ImageReadMode, decode_jpeg

    raw = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    read_mode = ImageReadMode.RGB if mode == "RGB" else ImageReadMode.GRAY
    try:
        pixels = decode_jpeg(raw, mode=read_mode, device="cuda", apply_exif_orientation=True)
    except RuntimeError:
        return None  # nvJPEG refuses some valid files (e.g. arithmetic coding): Pillow decides
    return pixels.permute(1, 2, 0).contiguous().cpu().numpy()


@op(
    name="image.decode",
    modality="image",
    inputs=("{column}",),
    consumes=("{column}",),
    input_types={"{column}": "image_bytes"},
    outputs=("{output}", "width", "height"),
    batch_format="row",
)
def decode_image(
    row: dict,
    *,
    column: str = "bytes",
    output: str = "image",
    mode: str = "RGB",
    max_pixels: int = MAX_PIXELS,
    draft_max_side: int | None = None,
    auto_draft: bool = True,
    device: Device = "auto",
) -> dict:
    """Decode JPEG, PNG, WebP, GIF, TIFF or BMP bytes into an HxWxC uint8 array.

    EXIF orientation is applied; animated images give their first frame; CMYK and palette images
    are converted to ``mode``; 16-bit images are scaled to 8 bits. Corrupt or truncated data and
    images above ``max_pixels`` are row errors.

    A Hugging Face ``Image`` column (``struct<bytes, path>``) is decoded from its ``bytes``.

    Args:
        column: Column holding the encoded bytes (or a Hugging Face ``Image`` struct).
        output: Column to write the decoded array to.
        mode: Pillow mode to convert to (RGB, RGBA, L, ...).
        max_pixels: Largest width*height accepted (guards against decompression bombs); may be
            set above Pillow's own ``Image.MAX_IMAGE_PIXELS``.
        draft_max_side: JPEG only: decode at the smallest DCT scale (1/2, 1/4 or 1/8) whose longer
            side still reaches this many pixels, much faster than a full decode before a resize.
            The planner sets it from a directly following ``image.resize`` when ``auto_draft`` is on.
        auto_draft: Let the planner set ``draft_max_side`` when an ``image.resize`` follows.
        device: ``auto`` decodes baseline JPEGs with nvJPEG (torchvision) when this worker sees a
            CUDA device, ``cpu`` always uses Pillow, ``cuda`` requires the GPU.
    """
    data = row[column]
    if isinstance(data, dict):  # a Hugging Face ``Image`` value, as HF datasets write Parquet
        if data.get("bytes") is None:
            raise RowError(f"column '{column}' holds a Hugging Face Image without bytes (path={data.get('path')!r}); only embedded images are decoded")
        data = data["bytes"]
    if data is None or len(data) == 0:
        raise RowError("empty image data")
    pixels = None
    try:
        if not draft_max_side and resolve_device(device, "image.decode") == "cuda":
            pixels = _decode_cuda(bytes(data), mode, max_pixels)
        if pixels is None:
            pixels = _decode_cpu(bytes(data), mode, max_pixels, draft_max_side)
    except _BAD_IMAGE as exc:
        raise RowError(f"undecodable image: {exc}") from exc
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    row[output] = pixels
    row["height"], row["width"] = int(pixels.shape[0]), int(pixels.shape[1])
    return row


@decode_image.gpu(resources=Resources(num_gpus=0.25))
def _decode_image_cuda(
    row: dict,
    *,
    column: str = "bytes",
    output: str = "image",
    mode: str = "RGB",
    max_pixels: int = MAX_PIXELS,
    draft_max_side: int | None = None,
    auto_draft: bool = True,
    device: Device = "auto",
) -> dict:
    """nvJPEG decode (CPU Pillow for what nvJPEG does not take); equal to the CPU path within JPEG IDCT rounding."""
    return decode_image.target(
        row, column=column, output=output, mode=mode, max_pixels=max_pixels, draft_max_side=None, auto_draft=auto_draft, device="cuda"
    )
