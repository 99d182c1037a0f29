"""The script's ``image_decoder`` helper, inlined by source where a converted network uses it."""

import mindspore as ms
from mindspore import nn
from mindspore.dataset import vision


class ImageDecoder(nn.Cell):
    """ONNX's ImageDecoder: encoded image bytes (JPEG, PNG, BMP, TIFF, WebP...) in, pixels
    [height, width, channels] uint8 out, decoded by MindSpore's dataset vision transforms.
    Decoding runs on the host with Python objects: PyNative mode only."""

    def __init__(self, pixel_format="RGB"):
        super().__init__()
        self.pixel_format = pixel_format  # "RGB", "BGR" or "Grayscale"

    def construct(self, encoded):
        image = vision.Decode(to_pil=True)(encoded.asnumpy())
        if self.pixel_format == "Grayscale":
            image = vision.Grayscale(1)(image)
        pixels = vision.ToNumpy()(image)
        if pixels.ndim == 2:
            pixels = pixels[:, :, None]
        if self.pixel_format == "BGR":
            pixels = pixels[:, :, ::-1]
        return ms.Tensor(pixels.copy())
