"""The shippers (``drainwatch ship``): each source system's records to Kafka, one module a
system, all through one contract (:mod:`streams.ship.base`).

``moab`` (Moab logs, whole or followed), ``slurm`` (scontrol/squeue snapshots), ``sacct`` (sacct
polls), ``jobcomp`` (a jobcomp/kafka topic), ``job_files`` (job event files), ``sample_files``
(node-sample traces), ``samples`` (the node sampler's sweeps: ``sampler``, ``cgroupio``);
``markers`` holds every shipper's watermark markers, ``dry_run`` the producer ``--dry-run``
prints through. They read with the replay's readers (``streams.sources``).
"""
