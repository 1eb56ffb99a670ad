"""Old home of the latency-targets calculator.

Each calculator now has its own module, ``helpers.calculators.<builder>``.

Every name that lived here still works, with a :class:`DeprecationWarning`, until release
``helpers._moved.REMOVE_IN`` (the table is ``helpers._moved.MOVED``).
"""

from .._moved import forwarder

__getattr__ = forwarder(__name__)
