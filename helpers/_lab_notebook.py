"""What a lab's notebook shows about itself: Colab's widget manager, and where its outputs come from.

Part of :mod:`helpers.labtools` (which re-exports :func:`enable_colab_widgets`
and :func:`provenance_note`).
"""

from __future__ import annotations

from . import _args


def enable_colab_widgets() -> bool:
    """On Colab with ipywidgets 8 or later, turn on Colab's custom widget manager; ``True`` if it did.

    Colab renders its own ipywidgets 7 natively; version 8 widgets (tqdm's
    progress bars among them) render only through the custom widget manager
    (``google.colab.output.enable_custom_widget_manager``). Elsewhere, or with
    ipywidgets 7, nothing happens.
    """
    import importlib.util
    import sys

    if (
        "google.colab" not in sys.modules
        or importlib.util.find_spec("ipywidgets") is None
    ):
        return False
    import ipywidgets

    if int(str(ipywidgets.__version__).split(".")[0]) < 8:
        return False
    from google.colab import output  # type: ignore[import-not-found]

    output.enable_custom_widget_manager()
    return True


def provenance_note(
    device_name: str, *, cores: int | None = None, gpu_sizes: bool = True
) -> str:
    """The note a lab prints about where its outputs come from, from the device this run used.

    A GPU run names the GPU; a CPU run names the CPU and its cores (default
    ``os.cpu_count()``) and, with ``gpu_sizes``, says that a GPU run uses the
    lab's larger sizes.

    >>> provenance_note("Tesla T4")
    'The outputs on this page come from a run on **Tesla T4**.'
    >>> provenance_note("CPU: AMD EPYC (1 thread)", cores=2, gpu_sizes=False)
    'The outputs on this page come from a run on **CPU: AMD EPYC (1 thread)**, 2 CPU cores.'
    """
    import os

    name = _args.name("device_name", device_name) and device_name.strip()
    sentence = f"The outputs on this page come from a run on **{name}**"
    if not name.lower().startswith("cpu"):
        return sentence + "."
    cores = os.cpu_count() if cores is None else _args.positive_int("cores", cores)
    sentence += f", {cores} CPU cores"
    if gpu_sizes:
        sentence += "; on a GPU the lab uses the larger sizes it names"
    return sentence + "."
