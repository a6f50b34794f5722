"""Summary protos of each kind SummaryWriter logs, built with the tensorboard package's own protos
and plugin metadata exactly as torch.utils.tensorboard.summary builds them, so that TensorBoard
(and EventAccumulator) read tapegrad's logs as torch's."""
import io
import json
import logging

import numpy as np
from google.protobuf import struct_pb2
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto

from ._convert import to_hwc, to_numpy, to_uint8_pixels, video_frames

__all__ = ["scalar", "tensor_proto", "histogram_raw", "histogram", "make_histogram", "image",
           "image_boxes", "make_image", "video", "audio", "text", "custom_scalars", "hparams",
           "pr_curve_raw", "pr_curve", "compute_curve", "mesh"]

logger = logging.getLogger(__name__)


def _shape_proto(shape):
    return TensorShapeProto(dim=[TensorShapeProto.Dim(size=d) for d in shape])


def _plugin_metadata(plugin_name, content=b""):
    return SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=plugin_name,
                                                                  content=content))


# ------------------------------------------------------------------------------- scalars, tensors

def scalar(name, value, collections=None, new_style=False, double_precision=False):
    """A one-value summary: simple_value (legacy), or a scalars-plugin tensor (new_style) of float
    or, with double_precision, double."""
    array = to_numpy(value).squeeze()
    if array.ndim != 0:
        raise AssertionError(f"Tensor should contain one element (0 dimensions). Was given size: "
                             f"{array.size} and {array.ndim} dimensions.")
    number = float(array)
    if not new_style:
        return Summary(value=[Summary.Value(tag=name, simple_value=number)])
    proto = (TensorProto(double_val=[number], dtype="DT_DOUBLE") if double_precision
             else TensorProto(float_val=[number], dtype="DT_FLOAT"))
    return Summary(value=[Summary.Value(tag=name, tensor=proto,
                                        metadata=_plugin_metadata("scalars"))])


def _half_bits(array):
    # torch stores each half value as the int32 bit pattern of its float32 widening
    return array.astype(np.float32).view(np.int32).ravel().tolist()


def _complex_parts(array):
    return np.stack([array.real, array.imag], -1).ravel().tolist()


def _as_list(array):
    return array.ravel().tolist()


# numpy dtype -> (TensorProto dtype, value field, converter); torch's table, keyed by numpy dtype
_TENSOR_FIELDS = {
    np.dtype(np.float16): ("DT_HALF", "half_val", _half_bits),
    np.dtype(np.float32): ("DT_FLOAT", "float_val", _as_list),
    np.dtype(np.float64): ("DT_DOUBLE", "double_val", _as_list),
    np.dtype(np.int8): ("DT_INT8", "int_val", _as_list),
    np.dtype(np.uint8): ("DT_UINT8", "uint32_val", _as_list),
    np.dtype(np.int16): ("DT_INT16", "int_val", _as_list),
    np.dtype(np.int32): ("DT_INT32", "int_val", _as_list),
    np.dtype(np.int64): ("DT_INT64", "int64_val", _as_list),
    np.dtype(np.complex64): ("DT_COMPLEX64", "scomplex_val", _complex_parts),
    np.dtype(np.complex128): ("DT_COMPLEX128", "dcomplex_val", _complex_parts),
    np.dtype(np.bool_): ("DT_BOOL", "bool_val", _as_list),
}


def tensor_proto(tag, tensor):
    """A tensor-plugin summary holding the whole tensor."""
    array = to_numpy(tensor)
    if array.size * array.itemsize >= 1 << 31:
        raise ValueError("tensor is bigger than protocol buffer's hard limit of 2GB in size")
    if array.dtype not in _TENSOR_FIELDS:
        raise ValueError(f"{tag} has unsupported tensor dtype {tensor.dtype}")
    dtype, field, convert = _TENSOR_FIELDS[array.dtype]
    proto = TensorProto(dtype=dtype, tensor_shape=_shape_proto(array.shape),
                        **{field: convert(array)})
    return Summary(value=[Summary.Value(tag=tag, metadata=_plugin_metadata("tensor"),
                                        tensor=proto)])


# ------------------------------------------------------------------------------------- histograms

def histogram_raw(name, min, max, num, sum, sum_squares, bucket_limits, bucket_counts):
    hist = HistogramProto(min=min, max=max, num=num, sum=sum, sum_squares=sum_squares,
                          bucket_limit=bucket_limits, bucket=bucket_counts)
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


def histogram(name, values, bins, max_bins=None):
    hist = make_histogram(to_numpy(values).astype(float), bins, max_bins)
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


def make_histogram(values, bins, max_bins=None):
    """numpy's histogram of values, merged down to max_bins buckets, and trimmed to the buckets
    between the first and last non-empty one (keeping one empty bucket before the first, as
    TensorBoard draws a bucket from the previous limit)."""
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        group = len(counts) // max_bins
        remainder = len(counts) % group
        if remainder:
            counts = np.pad(counts, [[0, group - remainder]], mode="constant", constant_values=0)
        counts = counts.reshape(-1, group).sum(axis=-1)
        merged_limits = np.empty((counts.size + 1,), limits.dtype)
        merged_limits[:-1] = limits[:-1:group]
        merged_limits[-1] = limits[-1]
        limits = merged_limits
    nonempty_so_far = np.cumsum(np.greater(counts, 0))
    start, end = np.searchsorted(nonempty_so_far, [0, nonempty_so_far[-1] - 1], side="right")
    start, end = int(start), int(end) + 1
    counts = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start:end + 1]
    if counts.size == 0 or limits.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    return HistogramProto(min=values.min(), max=values.max(), num=len(values), sum=values.sum(),
                          sum_squares=values.dot(values), bucket_limit=limits.tolist(),
                          bucket=counts.tolist())


# ----------------------------------------------------------------------------- images, video, audio

def make_image(pixels_hwc, rescale=1, rois=None, labels=None):
    """A PNG Summary.Image of an HWC uint8 array (boxes drawn first when rois are given)."""
    from PIL import Image
    height, width, channels = pixels_hwc.shape
    picture = Image.fromarray(pixels_hwc)
    if rois is not None:
        picture = draw_boxes(picture, rois, labels=labels)
    picture = picture.resize((int(width * rescale), int(height * rescale)),
                             Image.Resampling.LANCZOS)
    with io.BytesIO() as out:
        picture.save(out, format="PNG")
        encoded = out.getvalue()
    return Summary.Image(height=height, width=width, colorspace=channels,
                         encoded_image_string=encoded)


def image(tag, tensor, rescale=1, dataformats="NCHW"):
    pixels = to_uint8_pixels(to_hwc(to_numpy(tensor), dataformats))
    return Summary(value=[Summary.Value(tag=tag, image=make_image(pixels, rescale=rescale))])


def draw_boxes(picture, boxes, labels=None):
    """Red rectangles (xmin, ymin, xmax, ymax) with their labels drawn on a PIL image."""
    from PIL import ImageDraw, ImageFont
    font = ImageFont.load_default()
    draw = ImageDraw.Draw(picture)
    for i in range(boxes.shape[0]):
        left, top, right, bottom = boxes[i, 0], boxes[i, 1], boxes[i, 2], boxes[i, 3]
        draw.line([(left, top), (left, bottom), (right, bottom), (right, top), (left, top)],
                  width=2, fill="Red")
        label = None if labels is None else labels[i]
        if label:
            box_left, box_top, box_right, box_bottom = font.getbbox(label)
            text_width, text_height = box_right - box_left, box_bottom - box_top
            margin = np.ceil(0.05 * text_height)
            draw.rectangle([(left, bottom - text_height - 2 * margin), (left + text_width, bottom)],
                           fill="Red")
            draw.text((left + margin, bottom - text_height - margin), label, fill="black",
                      font=font)
    return picture


def image_boxes(tag, tensor_image, tensor_boxes, rescale=1, dataformats="CHW", labels=None):
    pixels = to_uint8_pixels(to_hwc(to_numpy(tensor_image), dataformats))
    encoded = make_image(pixels, rescale=rescale, rois=to_numpy(tensor_boxes), labels=labels)
    return Summary(value=[Summary.Value(tag=tag, image=encoded)])


def video(tag, tensor, fps=4):
    frames = to_uint8_pixels(video_frames(to_numpy(tensor)))
    return Summary(value=[Summary.Value(tag=tag, image=make_video(frames, fps))])


def make_video(frames, fps):
    """An animated GIF Summary.Image of [time, H, W, C] uint8 frames (needs moviepy; without it
    torch prints a note and logs an empty image, and so does this)."""
    try:
        from moviepy import editor as mpy
    except ImportError:
        print("add_video needs package moviepy")
        return None
    import tempfile
    _, height, width, channels = frames.shape
    clip = mpy.ImageSequenceClip(list(frames), fps=fps)
    with tempfile.NamedTemporaryFile(suffix=".gif") as f:
        clip.write_gif(f.name, verbose=False, logger=None)
        f.seek(0)
        return Summary.Image(height=height, width=width, colorspace=channels,
                             encoded_image_string=f.read())


def audio(tag, tensor, sample_rate=44100):
    """A mono 16-bit WAV of samples in [-1, 1] (clipped, with torch's warning, when beyond)."""
    import wave
    samples = to_numpy(tensor).squeeze()
    if abs(samples).max() > 1:
        print("warning: audio amplitude out of range, auto clipped.")
        samples = samples.clip(-1, 1)
    if samples.ndim != 1:
        raise AssertionError("input tensor should be 1 dimensional.")
    samples = (samples * np.iinfo(np.int16).max).astype("<i2")
    with io.BytesIO() as out:
        with wave.open(out, "wb") as wav:
            wav.setnchannels(1)
            wav.setsampwidth(2)
            wav.setframerate(sample_rate)
            wav.writeframes(samples.data)
        encoded = out.getvalue()
    clip = Summary.Audio(sample_rate=sample_rate, num_channels=1, length_frames=samples.shape[-1],
                         encoded_audio_string=encoded, content_type="audio/wav")
    return Summary(value=[Summary.Value(tag=tag, audio=clip)])


# ------------------------------------------------------------------------------ text and layouts

def text(tag, text):
    from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData
    metadata = _plugin_metadata("text", TextPluginData(version=0).SerializeToString())
    proto = TensorProto(dtype="DT_STRING", string_val=[text.encode(encoding="utf_8")],
                        tensor_shape=_shape_proto([1]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=metadata,
                                        tensor=proto)])


def custom_scalars(layout):
    """The custom-scalars layout {category: {chart title: ["Multiline" | "Margin", tags]}}."""
    from tensorboard.plugins.custom_scalar import layout_pb2
    categories = []
    for category, charts in layout.items():
        chart_protos = []
        for title, (kind, tags) in charts.items():
            if kind == "Margin":
                if len(tags) != 3:
                    raise AssertionError("len(tags) != 3")
                series = layout_pb2.MarginChartContent.Series(value=tags[0], lower=tags[1],
                                                              upper=tags[2])
                chart = layout_pb2.Chart(title=title,
                                         margin=layout_pb2.MarginChartContent(series=[series]))
            else:
                chart = layout_pb2.Chart(title=title,
                                         multiline=layout_pb2.MultilineChartContent(tag=tags))
            chart_protos.append(chart)
        categories.append(layout_pb2.Category(title=category, chart=chart_protos))
    proto = TensorProto(dtype="DT_STRING", tensor_shape=TensorShapeProto(),
                        string_val=[layout_pb2.Layout(category=categories).SerializeToString()])
    return Summary(value=[Summary.Value(tag="custom_scalars__config__", tensor=proto,
                                        metadata=_plugin_metadata("custom_scalars"))])


# -------------------------------------------------------------------------------------- hparams

def _hparam_value(name, value, discrete_values, session_start_info):
    """Set value in the session start info and return its HParamInfo (torch's rules: a bool is
    an int, hence a number; a tensor's first element is a number)."""
    from tensorboard.plugins.hparams.api_pb2 import DataType, HParamInfo

    from ... import Tensor
    if isinstance(value, Tensor):
        session_start_info.hparams[name].number_value = to_numpy(value)[0]
        return HParamInfo(name=name, type=DataType.Value("DATA_TYPE_FLOAT64"))
    if isinstance(value, (int, float)):
        field, data_type = "number_value", "DATA_TYPE_FLOAT64"
    elif isinstance(value, str):
        field, data_type = "string_value", "DATA_TYPE_STRING"
    else:
        raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")
    setattr(session_start_info.hparams[name], field, value)
    domain = None
    if discrete_values is not None:
        domain = struct_pb2.ListValue(values=[struct_pb2.Value(**{field: d})
                                              for d in discrete_values])
    return HParamInfo(name=name, type=DataType.Value(data_type), domain_discrete=domain)


def hparams(hparam_dict=None, metric_dict=None, hparam_domain_discrete=None):
    """The hparams plugin's experiment, session-start and session-end summaries."""
    from tensorboard.plugins.hparams import metadata
    from tensorboard.plugins.hparams.api_pb2 import Experiment, MetricInfo, MetricName, Status
    from tensorboard.plugins.hparams.plugin_data_pb2 import (HParamsPluginData, SessionEndInfo,
                                                             SessionStartInfo)
    for arg, given in (("hparam_dict", hparam_dict), ("metric_dict", metric_dict)):
        if not isinstance(given, dict):
            message = f"parameter: {arg} should be a dictionary, nothing logged."
            logger.warning(message)
            raise TypeError(message)
    hparam_domain_discrete = hparam_domain_discrete or {}
    if not isinstance(hparam_domain_discrete, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for k, v in hparam_domain_discrete.items():
        if (k not in hparam_dict or not isinstance(v, list)
                or not all(isinstance(d, type(hparam_dict[k])) for d in v)):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same "
                            f"type as hparam_dict[{k}].")
    session_start = SessionStartInfo()
    infos = [_hparam_value(k, v, hparam_domain_discrete.get(k), session_start)
             for k, v in hparam_dict.items() if v is not None]
    experiment = Experiment(hparam_infos=infos,
                            metric_infos=[MetricInfo(name=MetricName(tag=k)) for k in metric_dict])
    session_end = SessionEndInfo(status=Status.Value("STATUS_SUCCESS"))

    def plugin_summary(tag, **data):
        content = HParamsPluginData(version=metadata.PLUGIN_DATA_VERSION, **data)
        return Summary(value=[Summary.Value(tag=tag, metadata=_plugin_metadata(
            metadata.PLUGIN_NAME, content.SerializeToString()))])

    return (plugin_summary(metadata.EXPERIMENT_TAG, experiment=experiment),
            plugin_summary(metadata.SESSION_START_INFO_TAG, session_start_info=session_start),
            plugin_summary(metadata.SESSION_END_INFO_TAG, session_end_info=session_end))


# ------------------------------------------------------------------------------------- pr curves

def _pr_curve_summary(tag, data, num_thresholds):
    from tensorboard.plugins.pr_curve.plugin_data_pb2 import PrCurvePluginData
    content = PrCurvePluginData(version=0, num_thresholds=num_thresholds).SerializeToString()
    proto = TensorProto(dtype="DT_FLOAT", float_val=data.reshape(-1).tolist(),
                        tensor_shape=_shape_proto(data.shape[:2]))
    return Summary(value=[Summary.Value(tag=tag, metadata=_plugin_metadata("pr_curves", content),
                                        tensor=proto)])


def pr_curve_raw(tag, tp, fp, tn, fn, precision, recall, num_thresholds=127, weights=None):
    data = np.stack([np.asarray(x) if isinstance(x, (list, tuple)) else to_numpy(x)
                     for x in (tp, fp, tn, fn, precision, recall)])
    return _pr_curve_summary(tag, data, min(num_thresholds, 127))


def pr_curve(tag, labels, predictions, num_thresholds=127, weights=None):
    num_thresholds = min(num_thresholds, 127)
    data = compute_curve(labels, predictions, num_thresholds=num_thresholds, weights=weights)
    return _pr_curve_summary(tag, data, num_thresholds)


def compute_curve(labels, predictions, num_thresholds=None, weights=None):
    """The (tp, fp, tn, fn, precision, recall) rows at num_thresholds evenly spaced thresholds."""
    min_count = 1e-7  # keeps precision and recall finite where nothing is predicted
    if weights is None:
        weights = 1.0
    bucket_indices = np.int32(np.floor(predictions * (num_thresholds - 1)))
    positive = labels.astype(np.float64)
    value_range = (0, num_thresholds - 1)
    tp_buckets, _ = np.histogram(bucket_indices, bins=num_thresholds, range=value_range,
                                 weights=positive * weights)
    fp_buckets, _ = np.histogram(bucket_indices, bins=num_thresholds, range=value_range,
                                 weights=(1.0 - positive) * weights)
    tp = np.cumsum(tp_buckets[::-1])[::-1]
    fp = np.cumsum(fp_buckets[::-1])[::-1]
    tn = fp[0] - fp
    fn = tp[0] - tp
    precision = tp / np.maximum(min_count, tp + fp)
    recall = tp / np.maximum(min_count, tp + fn)
    return np.stack((tp, fp, tn, fn, precision, recall))


# ------------------------------------------------------------------------------------------ mesh

def mesh(tag, vertices, colors, faces, config_dict, display_name=None, description=None):
    """The mesh plugin's vertex / face / color tensors ([batch, count, 3] each)."""
    from tensorboard.plugins.mesh import metadata
    from tensorboard.plugins.mesh.plugin_data_pb2 import MeshPluginData
    json_config = "{}" if config_dict is None else json.dumps(config_dict, sort_keys=True)
    parts = [(value, kind) for value, kind in ((vertices, MeshPluginData.VERTEX),
                                               (faces, MeshPluginData.FACE),
                                               (colors, MeshPluginData.COLOR))
             if value is not None]
    components = metadata.get_components_bitmask([kind for _, kind in parts])
    values = []
    for value, kind in parts:
        array = np.asarray(to_numpy(value))
        part_metadata = metadata.create_summary_metadata(
            tag, display_name, kind, components, array.shape, description,
            json_config=json_config)
        proto = TensorProto(dtype="DT_FLOAT", float_val=array.reshape(-1).tolist(),
                            tensor_shape=_shape_proto(array.shape[:3]))
        values.append(Summary.Value(tag=metadata.get_instance_name(tag, kind), tensor=proto,
                                    metadata=part_metadata))
    return Summary(value=values)
