"""The projector plugin's files for add_embedding: tensors.tsv, metadata.tsv, sprite.png in
<step>/<tag>/, and the EmbeddingInfo entry of projector_config.pbtxt, laid out as torch does.
Files go through tensorboard's gfile, so remote log directories work as they do with torch."""
import io
import math

import numpy as np
from tensorboard.compat import tf
from tensorboard.plugins.projector.projector_config_pb2 import EmbeddingInfo

from ._convert import tile_images, to_numpy


def _join(directory, name):
    # the filesystem of the directory (local, or a remote scheme) knows its separator
    return tf.io.gfile.get_filesystem(directory).join(directory, name)


def _write(path, data):
    with tf.io.gfile.GFile(path, "wb") as f:
        f.write(tf.compat.as_bytes(data))


def write_metadata(metadata, save_path, metadata_header=None):
    """One label per line, or with a header, tab-separated columns under it."""
    if not metadata_header:
        lines = [str(x) for x in metadata]
    else:
        if len(metadata_header) != len(metadata[0]):
            raise AssertionError("len of header must be equal to the number of columns in "
                                 "metadata")
        lines = ["\t".join(str(e) for e in row) for row in [metadata_header] + list(metadata)]
    _write(_join(save_path, "metadata.tsv"), "\n".join(lines) + "\n")


def write_sprite(label_img, save_path):
    """The label images (NCHW in [0, 1]) tiled into a square PNG, ceil(sqrt(N)) per row."""
    from PIL import Image
    images = to_numpy(label_img)
    canvas_chw = tile_images(images, ncols=math.ceil(images.shape[0] ** 0.5))
    side = canvas_chw.shape[2]
    square_hwc = np.zeros((side, side, 3))
    square_hwc[:canvas_chw.shape[1], :, :] = canvas_chw.transpose(1, 2, 0)
    with io.BytesIO() as out:
        Image.fromarray(np.uint8((square_hwc * 255).clip(0, 255))).save(out, format="PNG")
        _write(_join(save_path, "sprite.png"), out.getvalue())


def write_matrix(matrix, save_path):
    """The embedding rows as tab-separated Python reprs of their values."""
    rows = ["\t".join(str(v.item()) for v in row) + "\n" for row in matrix]
    _write(_join(save_path, "tensors.tsv"), "".join(rows))


def embedding_info(metadata, label_img, subdir, global_step, tag):
    info = EmbeddingInfo()
    info.tensor_name = f"{tag}:{str(global_step).zfill(5)}"
    info.tensor_path = _join(subdir, "tensors.tsv")
    if metadata is not None:
        info.metadata_path = _join(subdir, "metadata.tsv")
    if label_img is not None:
        info.sprite.image_path = _join(subdir, "sprite.png")
        info.sprite.single_image_dim.extend([label_img.shape[3], label_img.shape[2]])
    return info


def write_projector_config(log_dir, config):
    from google.protobuf import text_format
    _write(_join(log_dir, "projector_config.pbtxt"), text_format.MessageToString(config))
