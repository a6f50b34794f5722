"""Turning what a user logs (tapegrad tensors, numpy arrays, Python numbers, matplotlib figures)
into numpy arrays, and images of any layout into the HWC uint8-ready arrays the encoders take.
The layout rules are torch.utils.tensorboard's, so both write the same pixels."""
import numpy as np


def to_numpy(value):
    """The numpy array of a logged value: a numpy array as it is, a scalar as a one-element array,
    a tensor detached from the tape (torch's make_np)."""
    from ... import Tensor
    if isinstance(value, np.ndarray):
        return value
    if np.isscalar(value):
        return np.array([value])
    if isinstance(value, Tensor):
        return value.detach().cpu().numpy()
    raise NotImplementedError(
        f"Got {type(value)}, but numpy array or torch tensor are expected.")


def tile_images(images_nchw, ncols=8):
    """One CHW canvas holding the N images of an N1HW / N3HW array, row by row, ncols per row
    (grey images are repeated into 3 channels); empty cells stay 0."""
    if not isinstance(images_nchw, np.ndarray):
        raise AssertionError("plugin error, should pass numpy array here")
    if images_nchw.shape[1] == 1:
        images_nchw = np.concatenate([images_nchw] * 3, 1)
    if images_nchw.ndim != 4 or images_nchw.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    count, _, height, width = images_nchw.shape
    ncols = min(count, ncols)
    nrows = int(np.ceil(float(count) / ncols))
    canvas = np.zeros((3, height * nrows, width * ncols), dtype=images_nchw.dtype)
    for i, img in enumerate(images_nchw):
        row, col = divmod(i, ncols)
        canvas[:, row * height:(row + 1) * height, col * width:(col + 1) * width] = img
    return canvas


def to_hwc(array, dataformats):
    """The HWC (3 channels for grey input) view of an image given in `dataformats` (letters of
    NCHW; a batch becomes one tiled image)."""
    if len(set(dataformats)) != len(dataformats):
        raise AssertionError(f"You can not use the same dimension shorthand twice. "
                             f"input_format: {dataformats}")
    if array.ndim != len(dataformats):
        raise AssertionError(f"size of input tensor and input format are different. "
                             f"tensor shape: {array.shape}, input_format: {dataformats}")
    dataformats = dataformats.upper()
    if len(dataformats) == 4:
        nchw = array.transpose([dataformats.find(c) for c in "NCHW"])
        return tile_images(nchw).transpose(1, 2, 0)
    if len(dataformats) == 3:
        hwc = array.transpose([dataformats.find(c) for c in "HWC"])
        return np.concatenate([hwc] * 3, 2) if hwc.shape[2] == 1 else hwc
    if len(dataformats) == 2:
        hw = array.transpose([dataformats.find(c) for c in "HW"])
        return np.stack([hw] * 3, 2)
    return None  # torch's converter also returns nothing for other ranks


def to_uint8_pixels(array):
    """uint8 images are kept as they are; every other dtype is read as intensities in [0, 1]
    (scaled by 255), then clipped, as torch converts them."""
    scale = 1 if array.dtype == np.uint8 else 255
    return (array.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)


def figure_to_image(figures, close=True):
    """The CHW uint8 RGB rendering of a matplotlib figure (NCHW for a list of figures)."""
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    def render(figure):
        canvas = FigureCanvasAgg(figure)
        canvas.draw()
        rgba = np.frombuffer(canvas.buffer_rgba(), dtype=np.uint8)
        width, height = figure.canvas.get_width_height()
        chw = np.moveaxis(rgba.reshape([height, width, 4])[:, :, :3], 2, 0)
        if close:
            plt.close(figure)
        return chw

    if isinstance(figures, list):
        return np.stack([render(f) for f in figures])
    return render(figures)


def video_frames(video):
    """[batch, time, C, H, W] videos as [time, H', W', C] frames, the batch tiled into a grid
    (batch padded to a power of two with black videos)."""
    batch, time, channels, height, width = video.shape
    if video.dtype == np.uint8:
        video = np.float32(video) / 255.0
    if batch & (batch - 1):
        padding = np.zeros((2 ** batch.bit_length() - batch, time, channels, height, width))
        video = np.concatenate((video, padding), axis=0)
    nrows = 2 ** ((batch.bit_length() - 1) // 2)
    ncols = video.shape[0] // nrows
    video = video.reshape(nrows, ncols, time, channels, height, width)
    return video.transpose(2, 0, 4, 1, 5, 3).reshape(time, nrows * height, ncols * width,
                                                       channels)
