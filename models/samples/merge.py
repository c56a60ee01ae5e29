"""Node samples from a stream split over partitions, merged back into time order: the job
merger's rules (``models.jobs.merge``) with samples as the records. A message of
``node-samples`` holds one node's sweep (several processes at one time), so its samples share
one offset (:meth:`~models.jobs.merge.JobEventMerger.add_many`)."""

from __future__ import annotations

from typing import Any

import orjson

from models.formats.sampletrace import parse_sample, sample_to_dict
from models.jobs.merge import JobEventMerger
from models.records.nodesample import NodeSample


def sample_sort_key(s: NodeSample) -> tuple[float, str, int, float, str]:
    return (s.ts, s.node, s.pid, s.start, s.job)


class SampleMerger(JobEventMerger):
    @staticmethod
    def sort_key(e: Any) -> Any:
        return sample_sort_key(e)

    @staticmethod
    def encode(e: Any) -> Any:
        return sample_to_dict(e)

    @staticmethod
    def decode(d: Any) -> Any:
        return parse_sample(orjson.dumps(d))
