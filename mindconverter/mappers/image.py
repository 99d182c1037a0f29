"""Image decoding: ImageDecoder (encoded bytes to pixels)."""

from __future__ import annotations

from .base import Cell, Input, Lit, NodeContext, Unsupported
from .registry import mapper


@mapper("ImageDecoder", since=20)
def image_decoder(ctx: NodeContext):
    """ImageDecoder -> the script's ImageDecoder cell (MindSpore's dataset vision Decode, run
    eagerly on the host: PyNative mode only)."""
    pixel_format = ctx.attr("pixel_format", "RGB")
    pixel_format = pixel_format.decode() if isinstance(pixel_format, bytes) else pixel_format
    if pixel_format not in ("RGB", "BGR", "Grayscale"):
        raise Unsupported(f"ImageDecoder pixel_format '{pixel_format}'")
    kwargs = {} if pixel_format == "RGB" else {"pixel_format": Lit(pixel_format)}
    return Cell("ImageDecoder", kwargs=kwargs, args=[Input(0)], role="image_decoder")
