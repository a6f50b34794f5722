"""SummaryWriter and FileWriter as torch.utils.tensorboard.writer: events go through the
tensorboard package's EventFileWriter (its queue, flush thread and file naming), so the files are
the ones torch writes, and TensorBoard reads them."""
import os
import time

from tensorboard.compat import tf
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from . import _embedding
from ._convert import figure_to_image, to_numpy
from ._graph import graph, onnx_graph
from .summary import (audio, custom_scalars, histogram, histogram_raw, hparams, image,
                      image_boxes, mesh, pr_curve, pr_curve_raw, scalar, tensor_proto, text, video)
from ..._torch_names import object_repr as _object_repr

__all__ = ["FileWriter", "SummaryWriter"]


def _tensorflow_bins():
    """add_histogram's bins="tensorflow": +-1e-12 growing by 10% up to 1e20, and 0 (the same
    repeated products as torch, so the same float limits)."""
    limits, v = [], 1e-12
    while v < 1e20:
        limits.append(v)
        v *= 1.1
    return [-v for v in reversed(limits)] + [0] + limits


class FileWriter:
    """Writes Event protos to one event file in log_dir (asynchronously: queued up to max_queue
    events, flushed at least every flush_secs)."""
    __repr__ = _object_repr  # Python's default repr, under PyTorch's module path

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self):
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None):
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None):
        self.add_event(event_pb2.Event(summary=summary), global_step, walltime)

    def add_graph(self, graph_profile, walltime=None):
        graph_def, run_metadata = graph_profile
        self.add_event(event_pb2.Event(graph_def=graph_def.SerializeToString()), None, walltime)
        tagged = event_pb2.TaggedRunMetadata(tag="step1",
                                             run_metadata=run_metadata.SerializeToString())
        self.add_event(event_pb2.Event(tagged_run_metadata=tagged), None, walltime)

    def add_onnx_graph(self, graph_def, walltime=None):
        self.add_event(event_pb2.Event(graph_def=graph_def.SerializeToString()), None, walltime)

    def flush(self):
        self.event_writer.flush()

    def close(self):
        self.event_writer.close()

    def reopen(self):
        self.event_writer.reopen()


class SummaryWriter:
    """Logs scalars, histograms, images, text, graphs, embeddings... to event files in log_dir
    (default runs/<Mon DD_HH-MM-SS>_<host><comment>), as torch.utils.tensorboard.SummaryWriter.
    Values may be tapegrad tensors, numpy arrays or Python numbers."""
    __repr__ = _object_repr  # Python's default repr, under PyTorch's module path

    default_bins = _tensorflow_bins()

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix=""):
        if not log_dir:
            import socket
            from datetime import datetime
            log_dir = os.path.join("runs", datetime.now().strftime("%b%d_%H-%M-%S") + "_"
                                   + socket.gethostname() + comment)
        self.log_dir = log_dir
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer = self.all_writers = None  # all_writers: add_scalars' runs too
        self._get_file_writer()

    def _get_file_writer(self):
        """The main run's FileWriter, made again after close()."""
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs,
                                          self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                # TensorBoard drops the events at or after a restart's first step
                self.file_writer.add_event(Event(step=self.purge_step,
                                                 file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=self.purge_step,
                                                 session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self):
        return self.log_dir

    def _add(self, summary, global_step=None, walltime=None):
        self._get_file_writer().add_summary(summary, global_step, walltime)

    # ---------------------------------------------------------------------------------- scalars

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        self._add(scalar(tag, scalar_value, new_style=new_style,
                         double_precision=double_precision), global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Each tag in its own run <log_dir>/<main_tag>_<tag>, under the tag main_tag, so that
        TensorBoard draws them in one chart."""
        walltime = time.time() if walltime is None else walltime
        log_dir = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            run_dir = log_dir + "/" + main_tag.replace("/", "_") + "_" + tag
            if run_dir not in self.all_writers:
                self.all_writers[run_dir] = FileWriter(run_dir, self.max_queue, self.flush_secs,
                                                       self.filename_suffix)
            self.all_writers[run_dir].add_summary(scalar(main_tag, value), global_step, walltime)

    def add_tensor(self, tag, tensor, global_step=None, walltime=None):
        self._add(tensor_proto(tag, tensor), global_step, walltime)

    def add_custom_scalars(self, layout):
        self._add(custom_scalars(layout))

    def add_custom_scalars_multilinechart(self, tags, category="default", title="untitled"):
        self.add_custom_scalars({category: {title: ["Multiline", tags]}})

    def add_custom_scalars_marginchart(self, tags, category="default", title="untitled"):
        if len(tags) != 3:
            raise AssertionError(f"Expected 3 tags, got {len(tags)}.")
        self.add_custom_scalars({category: {title: ["Margin", tags]}})

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None,
                    global_step=None):
        """The hparams and the metrics as scalars, in the run <log_dir>/<run_name> (default: the
        current time)."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        summaries = hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        run_dir = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=run_dir) as run_writer:
            for summary in summaries:
                run_writer.file_writer.add_summary(summary, global_step)
            for k, v in metric_dict.items():
                run_writer.add_scalar(k, v, global_step)

    # ------------------------------------------------------------------------------- histograms

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None):
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._add(histogram(tag, values, bins, max_bins=max_bins), global_step, walltime)

    def add_histogram_raw(self, tag, min, max, num, sum, sum_squares, bucket_limits,
                          bucket_counts, global_step=None, walltime=None):
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        self._add(histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits,
                                bucket_counts), global_step, walltime)

    # ------------------------------------------------------------------------ images and media

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        self._add(image(tag, img_tensor, dataformats=dataformats), global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        self._add(image(tag, img_tensor, dataformats=dataformats), global_step, walltime)

    def add_image_with_boxes(self, tag, img_tensor, box_tensor, global_step=None, walltime=None,
                             rescale=1, dataformats="CHW", labels=None):
        if labels is not None:
            if isinstance(labels, str):
                labels = [labels]
            if len(labels) != box_tensor.shape[0]:
                labels = None  # torch drops labels that do not match the boxes
        self._add(image_boxes(tag, img_tensor, box_tensor, rescale=rescale,
                              dataformats=dataformats, labels=labels), global_step, walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None):
        """A matplotlib figure (or a list of them, as a batch) rendered as an image."""
        self.add_image(tag, figure_to_image(figure, close), global_step, walltime,
                       dataformats="NCHW" if isinstance(figure, list) else "CHW")

    def add_video(self, tag, vid_tensor, global_step=None, fps=4, walltime=None):
        self._add(video(tag, vid_tensor, fps), global_step, walltime)

    def add_audio(self, tag, snd_tensor, global_step=None, sample_rate=44100, walltime=None):
        self._add(audio(tag, snd_tensor, sample_rate=sample_rate), global_step, walltime)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        self._add(text(tag, text_string), global_step, walltime)

    def add_mesh(self, tag, vertices, colors=None, faces=None, config_dict=None, global_step=None,
                 walltime=None):
        self._add(mesh(tag, vertices, colors, faces, config_dict), global_step, walltime)

    def add_pr_curve(self, tag, labels, predictions, global_step=None, num_thresholds=127,
                     weights=None, walltime=None):
        self._add(pr_curve(tag, to_numpy(labels), to_numpy(predictions), num_thresholds,
                           weights), global_step, walltime)

    def add_pr_curve_raw(self, tag, true_positive_counts, false_positive_counts,
                         true_negative_counts, false_negative_counts, precision, recall,
                         global_step=None, num_thresholds=127, weights=None, walltime=None):
        self._add(pr_curve_raw(tag, true_positive_counts, false_positive_counts,
                               true_negative_counts, false_negative_counts, precision, recall,
                               num_thresholds, weights), global_step, walltime)

    # ------------------------------------------------------------------------ graph, embedding

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """The model's graph (traced by tapegrad.fx; see _graph for how it differs from torch's
        jit graph)."""
        self._get_file_writer().add_graph(graph(model, input_to_model, verbose,
                                                use_strict_trace))

    def add_onnx_graph(self, prototxt):
        self._get_file_writer().add_onnx_graph(onnx_graph(prototxt))

    @staticmethod
    def _encode(rawstr):
        """A tag as one path component: %, / and \\ percent-escaped."""
        for char in "%/\\":
            rawstr = rawstr.replace(char, f"%{ord(char):02x}")
        return rawstr

    def add_embedding(self, mat, metadata=None, label_img=None, global_step=None, tag="default",
                      metadata_header=None):
        """The projector's files for the rows of mat, in <log_dir>/<step:05>/<tag>/, and their
        entry in projector_config.pbtxt."""
        mat = to_numpy(mat)
        if global_step is None:
            global_step = 0
        subdir = f"{str(global_step).zfill(5)}/{self._encode(tag)}"
        log_dir = self._get_file_writer().get_logdir()
        save_path = os.path.join(log_dir, subdir)
        if tf.io.gfile.exists(save_path):
            if not tf.io.gfile.isdir(save_path):
                raise NotADirectoryError(f"Path: `{save_path}` exists, but is a file. "
                                         f"Cannot proceed.")
            print("warning: Embedding dir exists, did you set global_step for add_embedding()?")
        else:
            tf.io.gfile.makedirs(save_path)
        if metadata is not None:
            if mat.shape[0] != len(metadata):
                raise AssertionError("#labels should equal with #data points")
            _embedding.write_metadata(metadata, save_path, metadata_header=metadata_header)
        if label_img is not None:
            if mat.shape[0] != label_img.shape[0]:
                raise AssertionError("#images should equal with #data points")
            _embedding.write_sprite(label_img, save_path)
        if mat.ndim != 2:
            raise AssertionError("mat should be 2D, where mat.size(0) is the number of data "
                                 "points")
        _embedding.write_matrix(mat, save_path)
        if not hasattr(self, "_projector_config"):
            self._projector_config = ProjectorConfig()
        self._projector_config.embeddings.extend([_embedding.embedding_info(
            metadata, label_img, subdir, global_step, tag)])
        _embedding.write_projector_config(log_dir, self._projector_config)

    # --------------------------------------------------------------------------------- lifetime

    def flush(self):
        for writer in (self.all_writers or {}).values():
            writer.flush()

    def close(self):
        if self.all_writers is None:
            return  # a second close does nothing
        for writer in self.all_writers.values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()
