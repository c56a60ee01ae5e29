"""Every message drainwatch writes to Kafka, encoded and decoded in one place.

One module per family, each message versioned (``"v": 1`` in JSON; the binary sample partial's
magic ``DWS1``), each decoder refusing an unknown version, a malformed message or a format only
an earlier internal generation wrote with :class:`CodecError`:

* :mod:`~streams.codecs.nodestatus`: node-status slices (shipper -> worker);
* :mod:`~streams.codecs.control`: the end-of-input control message on node-status;
* :mod:`~streams.codecs.partials`: drain partials, the drain -> jobs join totals, job-event and
  sample partials (worker -> its combiners);
* :mod:`~streams.codecs.metrics`: metrics.drain, metrics.jobs and the table-row metric topics;
* :mod:`~streams.codecs.alerts`: alert state changes;
* :mod:`~streams.codecs.deadletter`: rejected records and messages;
* :mod:`~streams.codecs.state`: the worker-state snapshot manifest (the state document itself
  is :mod:`models.state`).

The codecs are pure: they import the standard library, numpy, orjson, ``models.*`` and
``streams.format``/``streams.tables``/``streams.topics`` only. The JSON Schema of each topic is
declared in :mod:`streams.topics` (files in streams/schemas/).
"""

from __future__ import annotations

from streams.codecs.base import CodecError

__all__ = ["CodecError"]
